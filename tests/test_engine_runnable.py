"""Which tasks a campaign searches on a backend: a suite's foreign-hardware tasks are skipped."""

import pytest

from benchmarks import registry
from evo import wiring
from evo.config import ConfigError

ROCM_FIXTURES = "tests/fixtures/external/rocm"


def _rocm_tasks():
    return registry.load("rocm", ROCM_FIXTURES).tasks()


def test_suite_campaign_skips_amd_only_tasks_with_their_reason(capsys):
    tasks = _rocm_tasks()
    amd_only = [t.name for t in tasks if "cuda" not in t.runnable_on]
    assert amd_only, "the fixture suite must hold an AMD-only task"
    kept = wiring._runnable(tasks, "cuda", named=False)
    assert [t.name for t in kept] == [t.name for t in tasks if t.name not in amd_only]
    printed = capsys.readouterr().out
    assert all(name in printed for name in amd_only)
    assert "skipping" in printed


def test_named_task_that_cannot_run_is_an_error_naming_it():
    tasks = _rocm_tasks()
    amd_only = [t for t in tasks if "cuda" not in t.runnable_on]
    with pytest.raises(ConfigError, match=amd_only[0].name):
        wiring._runnable(tasks, "cuda", named=True)


def test_suite_with_nothing_runnable_is_an_error():
    tasks = [t for t in _rocm_tasks() if "cuda" not in t.runnable_on]
    with pytest.raises(ConfigError, match="cannot run on the cuda backend"):
        wiring._runnable(tasks, "cuda", named=False)
