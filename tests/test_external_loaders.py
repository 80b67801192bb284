"""External-suite loaders on fixture checkouts written in each suite's format."""

import json
import pathlib
import subprocess
import sys

import pytest

from benchmarks import external, registry
from benchmarks.external import common

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "external"
TRITONBENCH = FIXTURES / "tritonbench"
ROCM = FIXTURES / "rocm"
KERNELBENCH = FIXTURES / "kernelbench"
EVO = str(pathlib.Path(sys.executable).parent / "evo")  # the console script


def _by_name(suite, path):
    return {task.name: task for task in registry.load(suite, str(path)).tasks()}


def test_tritonbench_loads_every_file_with_a_separator():
    tasks = _by_name("tritonbench-revised", TRITONBENCH)
    assert sorted(tasks) == ["fnuz_cast", "row_max", "scale_shift"]
    scale_shift = tasks["scale_shift"]
    assert scale_shift.entry_point == "scale_shift"  # the wrapper the test code calls
    assert scale_shift.reference is None and "result_gold = test_scale_shift()" in scale_shift.harness
    assert common.SEPARATOR not in scale_shift.baseline_source
    assert scale_shift.difficulty == 1  # from the instruction JSON
    assert scale_shift.instruction.startswith("Write scale_shift(x, scale, shift)")
    assert "`row_max`" in tasks["row_max"].instruction  # generated: names the interface
    assert [case.name for case in scale_shift.cases] == ["test_scale_shift"]
    assert scale_shift.source_path.endswith("TritonBench_G_v1/scale_shift.py")


def test_rocm_takes_the_task_list_and_targets_from_the_instruction_file():
    tasks = _by_name("rocm", ROCM)
    assert sorted(tasks) == ["test_fx_add", "test_fx_rowsum", "test_fx_waves"]  # not check.py
    assert tasks["test_fx_add"].entry_point == "add_kernel"
    assert tasks["test_fx_rowsum"].entry_point == "row_sum_kernel"
    assert [case.name for case in tasks["test_fx_add"].cases] == ["test_add"]  # no perf/save tests
    assert "pytest" in tasks["test_fx_add"].tags


def test_kernelbench_reads_level_folders_with_modelnew_as_entry_point():
    tasks = _by_name("kernelbench", KERNELBENCH)
    assert sorted(tasks) == ["level1_1_Scale_And_Add", "level2_1_Linear_ReLU"]
    linear = tasks["level2_1_Linear_ReLU"]
    assert linear.entry_point == "ModelNew" and linear.difficulty == 3
    assert "class ModelNew(Model)" in linear.baseline_source
    assert "def get_init_inputs" in linear.harness
    assert len(linear.cases) == 5 and len(linear.interpreter_cases) == 2
    one_level = _by_name("kernelbench", KERNELBENCH / "KernelBench" / "level1")
    assert sorted(one_level) == ["level1_1_Scale_And_Add"]


@pytest.mark.parametrize("suite, path, name, marker", [
    ("tritonbench-revised", TRITONBENCH, "fnuz_cast", "float8_e4m3fnuz"),
    ("rocm", ROCM, "test_fx_waves", "waves_per_eu"),
])
def test_amd_only_features_keep_a_task_on_rocm_with_the_reason(suite, path, name, marker):
    task = _by_name(suite, path)[name]
    assert task.runnable_on == ("rocm",)
    assert marker in task.skip_reason and "not on cuda or interpreter" in task.skip_reason


def test_portable_fixtures_run_everywhere_and_hard_coded_cuda_needs_a_gpu():
    assert _by_name("rocm", ROCM)["test_fx_add"].runnable_on == ("cuda", "rocm", "interpreter")
    runnable_on, reason = common.platform_limits("x = torch.randn(3, device='cuda')")
    assert runnable_on == ("cuda", "rocm") and "interpreter" in reason
    assert common.platform_limits("x = torch.randn(3).cuda()")[0] == ("cuda", "rocm")


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(external.UnknownSuiteError, match="known suites: builtin, tritonbench-revised"):
        registry.load("tritonbench", str(TRITONBENCH))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        registry.load("rocm", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="give its path"):
        registry.load("kernelbench", None)
    with pytest.raises(FileNotFoundError, match="no kernel folder"):
        registry.load("kernelbench", str(tmp_path))
    (tmp_path / "bad.py").write_text("import torch\n" + common.SEPARATOR + "\n\n")
    with pytest.raises(ValueError, match="nothing after the separator"):
        registry.load("tritonbench-revised", str(tmp_path))


def test_rocm_instruction_file_naming_a_missing_kernel_is_an_error(tmp_path):
    folder = tmp_path / "ROCm_v1"
    folder.mkdir()
    (folder / "test_fx_add.py").write_text((ROCM / "data" / "ROCm_v1" / "test_fx_add.py").read_text())
    (tmp_path / "ROCm_eval_complex_instruct_v1.json").write_text(json.dumps(
        [{"file": "test_fx_add.py"}, {"file": "gone.py"}]))
    with pytest.raises(FileNotFoundError, match="gone.py"):
        registry.load("rocm", str(tmp_path))


def test_evo_tasks_lists_a_rocm_checkout_as_json():
    done = subprocess.run([EVO, "tasks", "--suite", "rocm", "--path", str(ROCM),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = {task["name"]: task for task in json.loads(done.stdout)["tasks"]}
    assert sorted(listed) == ["test_fx_add", "test_fx_rowsum", "test_fx_waves"]
    assert listed["test_fx_waves"]["runnable_on"] == ["rocm"]
    assert "waves_per_eu" in listed["test_fx_waves"]["skip_reason"]


def test_evo_tasks_rejects_an_unknown_suite_with_exit_status_2():
    done = subprocess.run([EVO, "tasks", "--suite", "nope", "--path", str(ROCM)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown suite 'nope'" in done.stderr
