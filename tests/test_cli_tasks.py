"""`evo tasks` run as the installed console script, in a subprocess, as a user would."""

import json
import pathlib
import subprocess
import sys

import pytest

EVO = str(pathlib.Path(sys.executable).parent / "evo")
FIELDS = {"name", "suite", "entry_point", "difficulty", "dtypes", "tags", "cases",
          "interpreter_cases", "runnable_on", "skip_reason", "knob_space"}


def _evo(*args):
    return subprocess.run([EVO, *args], capture_output=True, text=True, timeout=120)


def test_tasks_json_lists_the_builtin_suite_with_every_field():
    result = _evo("tasks", "--json")
    assert result.returncode == 0, result.stderr
    tasks = json.loads(result.stdout)["tasks"]
    assert len(tasks) == 15
    assert {"vector_add", "softmax", "flash_attention", "flip2d"} <= {t["name"] for t in tasks}
    for task in tasks:
        assert set(task) == FIELDS, task["name"]
        assert task["suite"] == "builtin" and 1 <= task["difficulty"] <= 5
        assert len(task["cases"]) >= 3 and len(task["interpreter_cases"]) >= 3
        assert task["dtypes"] and task["tags"]


@pytest.mark.slow
def test_tasks_table_names_every_task():
    result = _evo("tasks", "--suite", "builtin")
    assert result.returncode == 0, result.stderr
    assert "15 tasks" in result.stdout
    for name in ("batched_matmul", "cross_entropy", "row_argmax", "layernorm"):
        assert name in result.stdout
