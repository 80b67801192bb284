"""Where external tasks run, decided from their files, checked on GEAK-eval's and
KernelBench's real tasks; and the entry point a GEAK file is given."""

import pytest

import external_suites
from benchmarks import listing, registry
from benchmarks.external import common
from benchmarks.external.platforms import platform_limits
from evo.records import make_candidate
from fitness.device import detect
from fitness.judge import harness
from fitness.judge.cascade import Cascade
from fitness.processes.device_lock import DeviceLock
from fitness.processes.pool import WorkerPool
from fitness.settings import Limits

pytestmark = pytest.mark.slow  # runs external tasks on the interpreter: `make test-fast` leaves it out


@pytest.fixture(scope="module")
def suites():
    geak, kernelbench = external_suites.suite("GEAK-eval"), external_suites.suite("KernelBench")
    return {suite: {task.name: task for task in registry.load(suite, str(path)).tasks()}
            for suite, path in (("tritonbench-revised", geak), ("rocm", geak),
                                ("kernelbench", kernelbench))}


def test_no_geak_task_runs_on_the_interpreter_and_every_kernelbench_task_does(suites):
    on_interpreter = {suite: sum("interpreter" in task.runnable_on for task in tasks.values())
                      for suite, tasks in suites.items()}
    assert on_interpreter == {"tritonbench-revised": 0, "rocm": 0, "kernelbench": 270}
    assert len(suites["tritonbench-revised"]) == 184 and len(suites["rocm"]) == 31


def test_each_reason_names_the_backends_it_rules_out(suites):
    # GEAK-eval's own files name HIP's libdevice; the loader names it portably
    # (common.portable_libdevice), so such a reference runs on NVIDIA too, and a source that
    # still names it (a candidate's) runs only on AMD
    ported = suites["tritonbench-revised"]["rmsnorm_triton"]
    assert ported.runnable_on == ("cuda", "rocm") and "extra.hip" not in ported.baseline_source
    runnable_on, reason = platform_limits("y = tl.extra.hip.libdevice.pow(x, 2)\n")
    assert runnable_on == ("rocm",)
    assert reason.startswith("not on cuda or interpreter: needs AMD, uses HIP libdevice")
    fp8 = suites["rocm"]["gemm"]
    assert fp8.runnable_on == ("rocm",) and "float8_e4m3fnuz" in fp8.skip_reason
    assert ". not on interpreter: places tensors on 'cuda' by name" in fp8.skip_reason


def test_what_the_interpreter_lacks_keeps_a_task_off_it(suites):
    list_grid = suites["tritonbench-revised"]["kv_cache_filling"]  # device picked at run time
    assert list_grid.runnable_on == ("cuda", "rocm")
    assert list_grid.skip_reason == ("not on interpreter: launches a kernel with a list as its "
                                     "grid (the interpreter takes tuples)")
    libdevice = suites["tritonbench-revised"]["geglu_tanh_triton"]
    assert "uses libdevice math" in libdevice.skip_reason


@pytest.mark.parametrize("source, runs_on_interpreter", [
    ("x = torch.randn(3).to(DEVICE)\nif torch.cuda.is_available():\n    torch.cuda.manual_seed(0)\n", True),
    ("torch.cuda.synchronize()\n", False),
    ("sms = torch.cuda.get_device_properties(0).multi_processor_count\n", False),
    ("target = triton.runtime.driver.active.get_current_target()\n", False),
    ("y = libdevice.exp(x)\n", False),
    ("kernel[(n,)](x)\n", True),
    ("kernel[[n, 1]](x)\n", False),
    ("grid = lambda meta: [triton.cdiv(n, meta['B'])]\nkernel[grid](x)\n", False),
])
def test_the_interpreter_rule_reads_the_code(source, runs_on_interpreter):
    assert ("interpreter" in common.platform_limits(source)[0]) == runs_on_interpreter


def test_a_helper_the_test_code_calls_is_not_the_entry_point():
    kernel = ("def num_sms():\n    return 4\n\n\n@triton.jit\ndef _k(x_ptr):\n    pass\n\n\n"
              "class Op(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
              "        _k[(1,)](x)\n\n\nop = Op.apply\n\n\ndef run(x):\n    return op(x)\n")
    assert common.pick_entry_point(kernel, "y = run(x, num_sms())\n", "f") == "run"
    assert common.pick_entry_point(kernel, "y = num_sms()\n", "f") == "num_sms"  # nothing launches


@pytest.fixture(scope="module")
def interpreter_runner(tmp_path_factory):
    device = detect("interpreter")
    pool = WorkerPool(device, 1, "candidate", str(tmp_path_factory.mktemp("workers")))
    yield Cascade(device, pool, None, DeviceLock(exclusive_timing=False),
                  Limits(reference_s=120.0), harness_seed=7)
    pool.close()


@pytest.mark.parametrize("suite, name, trips_on, reason", [
    ("tritonbench-revised", "kv_cache_filling", "can only concatenate list", "list as its grid"),
    ("tritonbench-revised", "softmax_optimize", "Torch not compiled with CUDA", "on 'cuda' by name"),
    ("rocm", "rmsnorm_fwd", "0 active drivers", "driver.active"),
])
def test_a_task_the_rule_keeps_off_the_interpreter_fails_there_for_its_reason(
        suites, interpreter_runner, suite, name, trips_on, reason):
    task = suites[suite][name]
    assert "interpreter" not in task.runnable_on and reason in task.skip_reason
    with pytest.raises(harness.HarnessError, match=trips_on):
        harness.reference(interpreter_runner, task)
    refused = interpreter_runner.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert refused.failure_kind == "unsupported_on_backend" and reason in refused.error_trace


def test_a_kernelbench_task_the_rule_admits_runs_on_the_interpreter(suites, interpreter_runner):
    task = suites["kernelbench"]["level1_15_Matmul_for_lower_triangular_matrices"]
    assert "interpreter" in task.runnable_on
    assert harness.reference(interpreter_runner, task).structure  # outputs for every trial


def test_a_kernelbench_signature_is_how_the_model_is_built_and_called(suites):
    task = suites["kernelbench"]["level2_31_Conv2d_Min_Add_Multiply"]
    assert listing.signature(task) == ("ModelNew(in_channels, out_channels, kernel_size, "
                                       "constant_value, bias_shape, scaling_factor).forward(x)")
