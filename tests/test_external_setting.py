"""The one setting through which the tests read the real external suites, KERNELEVO_EXTERNAL
(tests/external_suites.py): with no checkout there, the tests that need one are skipped, each
saying which folder it looked for; with checkouts, they run."""

import os
import re
import subprocess
import sys

import pytest

import external_suites

# Tests that read a real checkout (test_external_platforms.py: some of its tests do).
NEED_A_CHECKOUT = [
    "tests/test_cli_tasks.py::test_rocm_rmsnorm_fwd_names_its_kernel_not_a_helper_it_calls",
    "tests/test_gate_honest.py::test_every_geak_task_refuses_breaches_its_own_reference_never_commits",
    "tests/test_gate_cli.py::test_every_geak_reference_is_admitted_as_a_candidate_of_its_own_task",
    "tests/test_external_platforms.py",
]
CHEAP = ["tests/test_cli_tasks.py::test_rocm_rmsnorm_fwd_names_its_kernel_not_a_helper_it_calls",
         "tests/test_gate_honest.py::test_every_geak_task_refuses_breaches_its_own_reference_never_commits[rocm]"]


def _pytest(folder, node_ids):
    """pytest in a subprocess from the repository root, the setting naming folder."""
    env = {**os.environ, external_suites.VARIABLE: str(folder)}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          *node_ids], cwd=external_suites.ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    counts = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (passed|skipped|failed|errors?)",
                                                         ran.stdout.splitlines()[-1]))
    return ran, counts


def _linked(folder):
    """folder, holding links to the real checkouts (or the test skipped without them)."""
    for name in ("GEAK-eval", "KernelBench"):
        (folder / name).symlink_to(external_suites.suite(name))
    return folder


def test_the_setting_names_the_folder_and_defaults_beside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv(external_suites.VARIABLE, raising=False)
    assert external_suites.folder() == external_suites.ROOT.parent / "shared" / "external"
    monkeypatch.setenv(external_suites.VARIABLE, str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=re.escape(
            f"no folder {tmp_path / 'KernelBench'} (set {external_suites.VARIABLE} to a folder")):
        external_suites.suite("KernelBench")


def test_without_the_checkouts_the_tests_that_need_them_are_skipped_saying_why(tmp_path):
    ran, counts = _pytest(tmp_path, NEED_A_CHECKOUT)
    assert ran.returncode == 0 and not {"failed", "error", "errors"} & set(counts), ran.stdout[-3000:]
    assert counts["skipped"] >= len(NEED_A_CHECKOUT), ran.stdout[-3000:]
    reasons = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]
    assert reasons and all(f"no folder {tmp_path / 'GEAK-eval'} (set KERNELEVO_EXTERNAL" in line
                           for line in reasons), reasons


@pytest.mark.slow
def test_with_the_checkouts_where_the_setting_points_the_tests_run(tmp_path):
    ran, counts = _pytest(_linked(tmp_path), CHEAP)
    assert counts == {"passed": len(CHEAP)}, ran.stdout[-3000:]


def test_a_test_that_reads_a_checkout_gets_it_where_the_setting_points(tmp_path, monkeypatch):
    monkeypatch.setenv(external_suites.VARIABLE, str(_linked(tmp_path)))
    assert external_suites.suite("GEAK-eval") == tmp_path / "GEAK-eval"
