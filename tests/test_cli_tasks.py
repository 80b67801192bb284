"""`evo tasks` run as the installed console script, in a subprocess, as a user would."""

import json
import pathlib
import subprocess
import sys

import pytest

import external_suites

EVO = str(pathlib.Path(sys.executable).parent / "evo")
FIELDS = {"name", "suite", "entry_point", "signature", "difficulty", "dtypes", "tags", "cases",
          "interpreter_cases", "runnable_on", "not_on", "skip_reason", "knob_space", "timed",
          "untimed_reason", "knobs"}


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


def test_a_builtin_task_shows_its_signature_and_runs_everywhere():
    tasks = {task["name"]: task for task in json.loads(_evo("tasks", "--json").stdout)["tasks"]}
    softmax = tasks["softmax"]
    assert softmax["entry_point"] == "softmax"
    assert softmax["signature"] == "softmax(x: torch.Tensor) -> torch.Tensor"
    for task in tasks.values():  # every built-in task runs on the CPU interpreter too
        assert task["runnable_on"] == ["cuda", "rocm", "interpreter"] and task["not_on"] == {}


def test_piped_table_is_as_wide_as_its_content():
    result = _evo("tasks")  # stdout is a pipe, not a terminal
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "difficulty" in line)
    for column in ("name", "suite", "entry point", "dtypes", "cases", "runs on"):
        assert column in header
    assert "flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor" in result.stdout
    assert "…" not in result.stdout and max(map(len, lines)) > 80


def test_rocm_rmsnorm_fwd_names_its_kernel_not_a_helper_it_calls():
    result = _evo("tasks", "--suite", "rocm", "--path", str(external_suites.suite("GEAK-eval")), "--json")
    assert result.returncode == 0, result.stderr
    task = next(t for t in json.loads(result.stdout)["tasks"] if t["name"] == "rmsnorm_fwd")
    assert set(task) == FIELDS
    assert task["entry_point"] == "rms_kernel"  # the test code also calls get_num_sms()
    assert task["signature"] == (
        "rms_kernel(output_ptr, input_ptr, g_ptr, rsigma_ptr, input_row_stride, output_row_stride, "
        "n_rows, n_cols, epsilon, ZERO_CENTERED_GAMMA: tl.constexpr, BLOCK_SIZE: tl.constexpr, "
        "USE_BLOCKED: tl.constexpr, NUM_PRGMS: tl.constexpr)")
    assert task["runnable_on"] == ["cuda", "rocm"] and list(task["not_on"]) == ["interpreter"]
    assert "torch.cuda.get_device_properties" in task["not_on"]["interpreter"]


def test_builtin_knobs_hold_the_per_shape_table_on_every_backend():
    softmax = next(t for t in json.loads(_evo("tasks", "--json").stdout)["tasks"] if t["name"] == "softmax")
    assert set(softmax["knobs"]) == {"cuda", "rocm", "interpreter"}
    table = {f"CONFIGS[{bucket}].{name}" for bucket, entries in softmax["knob_space"]["buckets"].items()
             for name in entries}
    assert table and table <= set(softmax["knobs"]["cuda"])
    assert softmax["knobs"]["cuda"]["CONFIGS[short].LOOP"] == softmax["knob_space"]["knobs"]["LOOP"]


def test_external_tasks_report_the_knobs_offline_operators_vary():
    path = str(external_suites.suite("GEAK-eval"))
    result = _evo("tasks", "--suite", "tritonbench-revised", "--path", path, "--json")
    assert result.returncode == 0, result.stderr
    tasks = {t["name"]: t for t in json.loads(result.stdout)["tasks"]}
    assert sum(bool(t["knobs"].get("cuda")) for t in tasks.values()) >= 0.8 * len(tasks)
    assert not tasks["add_value"]["knob_space"]["buckets"]  # no per-shape table, yet knobs
    assert tasks["add_value"]["knobs"]["cuda"]  # the launch's BLOCK_SIZE and options
    rocm = {t["name"]: t for t in json.loads(
        _evo("tasks", "--suite", "rocm", "--path", path, "--json").stdout)["tasks"]}
    assert rocm["test_add_kernel"]["knobs"]["cuda"]["add_kernel.num_warps"] == [1, 2, 4, 8, 16]


@pytest.mark.slow
def test_tasks_table_names_every_task():
    result = _evo("tasks", "--suite", "builtin")
    assert result.returncode == 0, result.stderr
    assert "15 tasks" in result.stdout
    for name in ("batched_matmul", "cross_entropy", "row_argmax", "layernorm"):
        assert name in result.stdout
