"""External candidates timed on the judge's clock (item 6 of issue 48): the suites' timing
code recorded in a checker (`benchmarks.external.recorded`, `kernelbench_models`,
`rocm_launches`), the candidate checked and timed on judge-made inputs by the built-in plan
(`fitness.judge.performance_inputs`). In-process recording on small suites written here,
then real Evaluators (sandboxed workers, checkers) under the interpreter."""

import dataclasses
import pathlib
import textwrap

import pytest
import torch

import compromised
from benchmarks import registry
from benchmarks.external import common, kernelbench_models, recorded, tritonbench
from evo.records import make_candidate
from fitness import Evaluator, Limits, Settings
from fitness.judge import anticheat, fenced

_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)


def axpy_out(x, y, out, alpha):
    n = x.numel()
    _axpy_kernel[(triton.cdiv(n, 256),)](x, y, out, n, alpha, BLOCK=256)


class _Axpy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, alpha):
        out = torch.empty_like(x)
        axpy_out(x, y, out, alpha)
        return out


axpy = _Axpy.apply
'''

_TESTS = '''
def test_axpy_out():
    x, y, out = torch.randn(300), torch.randn(300), torch.empty(300)
    axpy_out(x, y, out, 0.5)
    return {"test_case_1": out}


result_gold = test_axpy_out()
'''

_PERF = '''
from axpy_out import axpy_out
from geak_eval.perf.performance_utils import Performance_Metrics, do_bench_config
import torch


class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__("axpy_out", dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(10, 14):
            self.input_tensors.append((torch.rand(2 ** i), torch.rand(2 ** i)))

    def to_cuda(self, input_tensor):
        return tuple(t.cuda() for t in input_tensor)

    def call_op(self, input_tensor):
        x, y = input_tensor
        out = torch.empty_like(x)
        axpy_out(x, y, out, alpha=0.5)
        return out
'''


def _suite(root: pathlib.Path, perf: str = _PERF, kernel: str = _KERNEL,
           tests: str = _TESTS) -> pathlib.Path:
    """Writes a one-task suite in GEAK-eval's layout; returns the kernel file."""
    folder = root / "data" / "TritonBench_G_v1"
    golden = root / "performance_metrics" / "perf_G" / "golden_metrics"
    folder.mkdir(parents=True)
    golden.mkdir(parents=True)
    path = folder / "axpy_out.py"
    path.write_text(f"{kernel.strip()}\n\n\n{common.SEPARATOR}\n\n{tests.strip()}\n")
    (golden / "axpy_out_perf.py").write_text(textwrap.dedent(perf).strip() + "\n")
    return path


def _calls(tmp_path, perf: str = _PERF) -> recorded.PerformanceCalls:
    return tritonbench.load_file(_suite(tmp_path, perf)).timing_calls


def test_a_call_that_fills_an_out_argument_is_recorded_with_it_as_an_output(tmp_path):
    calls = _calls(tmp_path).recorded("cpu", None)
    assert (calls.entry, calls.arity, calls.written, calls.inputs) == ("axpy_out", 4, (2,), 4)
    x, y, out, alpha = calls.make_inputs({"input": 1}, 7, "cpu")
    assert x.shape == (2048,) and alpha == 0.5  # the keyword argument, by position
    again = calls.make_inputs({"input": 1}, 7, "cpu")
    assert torch.equal(x, again[0]) and torch.equal(y, again[1])  # deterministic in the seed
    other = calls.make_inputs({"input": 1}, 8, "cpu")
    assert not torch.equal(x, other[0])  # new values from another seed
    out.fill_(7.0)
    (result,) = calls(x, y, out, alpha)
    assert torch.allclose(result, 0.5 * x + y)
    assert bool((out == 7.0).all())  # the caller's stays as made: the reference wrote a copy


@pytest.mark.parametrize("perf, why", [
    (_PERF.replace("axpy_out(x, y, out, alpha=0.5)", "axpy_out(x, y, out, alpha=torch.float32)"),
     "argument(s) [3] of type(s) ['dtype']"),
    (_PERF.replace("axpy_out(x, y, out, alpha=0.5)", "out.copy_(0.5 * x + y)"),
     "made no call of a function of the kernel module"),
    (_PERF.replace("(torch.rand(2 ** i), torch.rand(2 ** i))", "(torch.rand(2 ** i), torch.rand(2 ** i), torch.nn.Identity())")
     .replace("tuple(t.cuda() for t in input_tensor)", "input_tensor")
     .replace("x, y = input_tensor", "x, y, f = input_tensor")
     .replace("axpy_out(x, y, out, alpha=0.5)", "axpy_out(f(x), y, out, 0.5)\n        axpy_out(out, y, out, 0.5)"),
     "call_op's input holds argument(s) [2] of type(s) ['Identity']"),
    (_PERF.replace("(torch.rand(2 ** i), torch.rand(2 ** i))", "(torch.ones(2 ** i), torch.ones(2 ** i))"),
     "do not change with the seed"),
])
def test_timing_code_that_cannot_be_recorded_says_why(tmp_path, perf, why):
    reply = _calls(tmp_path, perf).record("cpu", None)
    assert why in reply["unrecordable"], reply


def test_an_autograd_functions_apply_bound_at_top_level_is_an_entry(tmp_path):
    perf = _PERF.replace("from axpy_out import axpy_out", "from axpy_out import axpy").replace(
        "out = torch.empty_like(x)\n        axpy_out(x, y, out, alpha=0.5)\n        return out", "return axpy(x, y, 0.5)")
    calls = _calls(tmp_path, perf).recorded("cpu", 1)
    assert (calls.entry, calls.arity, calls.written) == ("axpy", 3, ())  # its inner call not counted
    x, y, alpha = calls.make_inputs({"input": 0}, 5, "cpu")
    assert torch.allclose(calls(x, y, alpha)[0], 0.5 * x + y)


_APPLIES_ON_THE_CLASS = _PERF.replace("from axpy_out import axpy_out", "from axpy_out import _Axpy").replace(
    "out = torch.empty_like(x)\n        axpy_out(x, y, out, alpha=0.5)\n        return out",
    "return _Axpy.apply(x, y, 0.5)")


def test_an_autograd_function_call_op_applies_on_the_class_is_its_entry(tmp_path):
    """call_op calls `Fn.apply(...)` on the class the module defines (fifth_order_sph_harmonics,
    layer_norm_liger): the class's `apply` is recorded, not the first function its forward
    calls, and the class is left as it was."""
    calls = _calls(tmp_path, _APPLIES_ON_THE_CLASS).recorded("cpu", 2)
    assert (calls.entry, calls.arity, calls.written) == ("_Axpy.apply", 3, ())
    assert (calls.entry_point, calls.entry_call) == ("_Axpy", {"kind": "method", "name": "apply"})
    kernel = calls._loaded()[0]
    assert "apply" not in vars(kernel._Axpy)  # `Function.apply` inherited again
    x, y, alpha = calls.make_inputs({"input": 1}, 5, "cpu")
    assert torch.allclose(calls(x, y, alpha)[0], 0.5 * x + y)


_RETURNS_NO_STATE = _KERNEL + '''

def axpy_state(x, y, alpha, final_state=False):
    out = torch.empty_like(x)
    axpy_out(x, y, out, alpha)
    return out, (out.sum() if final_state else None)
'''
_CALLS_WITHOUT_STATE = _PERF.replace("from axpy_out import axpy_out", "from axpy_out import axpy_state").replace(
    "out = torch.empty_like(x)\n        axpy_out(x, y, out, alpha=0.5)\n        return out",
    "return axpy_state(x, y, 0.5)")


def test_a_returned_tuples_none_items_are_no_outputs(tmp_path):
    """fused_recurrent_delta returns `(o, final_state)`, its final state None unless asked
    for: the call is recorded, its one tensor the output."""
    calls = tritonbench.load_file(_suite(tmp_path, _CALLS_WITHOUT_STATE, _RETURNS_NO_STATE)).timing_calls
    calls = calls.recorded("cpu", 2)
    assert (calls.entry, calls.arity, calls.written) == ("axpy_state", 3, ())
    x, y, alpha = calls.make_inputs({"input": 0}, 5, "cpu")
    (out,) = calls(x, y, alpha)
    assert torch.allclose(out, 0.5 * x + y)


_TWO_CALLS = _PERF.replace("axpy_out(x, y, out, alpha=0.5)",
                           "axpy_out(x, y, out, 0.5)\n        axpy_out(out, y, out, 0.5)")


def test_a_call_op_that_calls_the_module_twice_is_recorded_whole(tmp_path):
    """chunk_gla_fwd's call_op feeds one kernel's output to the next: call_op whole is the
    timed call, its input's leaves the arguments, every call of it the candidate's."""
    calls = _calls(tmp_path, _TWO_CALLS).recorded("cpu", 2)
    assert (calls.entry, calls.arity, calls.written, calls.inputs) == ("axpy_out", 2, (), 2)
    assert calls.entry_call["kind"] == "call_op" and calls.entry_call["module"] == "axpy_out"
    x, y = calls.make_inputs({"input": 1}, 3, "cpu")
    assert x.shape == (2048,) and not torch.equal(x, calls.make_inputs({"input": 1}, 4, "cpu")[0])
    (out,) = calls(x, y)
    assert torch.allclose(out, 0.5 * (0.5 * x + y) + y)


def test_making_one_input_holds_one_of_the_inputs_before_it_at_a_time(tmp_path):
    """Input k is made by running the timing code's loop up to it: the inputs before it are
    dropped as the next is made, not held to the end (a task's come to 4.8 GB)."""
    perf = _PERF.replace("for i in range(10, 14):", "for i in range(10, 14):\n"
                         "            HELD.append(sum(t is not None for t in self.input_tensors))")
    perf = perf.replace("class performance_metrics", "HELD = []\n\n\nclass performance_metrics")
    calls = _calls(tmp_path, perf).recorded("cpu", None)
    held = calls._loaded()[1].HELD
    held.clear()
    x, y, out, alpha = calls.make_inputs({"input": 3}, 7, "cpu")
    assert held == [0, 1, 1, 1] and x.shape == (8192,)


def _devices_seen(tmp_path, perf: str) -> tuple[recorded.PerformanceCalls, list]:
    """`perf` with each input's first tensor's device noted in DEVICES as it is made."""
    perf = perf.replace("class performance_metrics", "DEVICES = []\n\n\nclass performance_metrics")
    perf = perf.replace("            self.input_tensors.append((torch.rand(2 ** i), torch.rand(2 ** i)))",
                        "            made = (torch.rand(2 ** i), torch.rand(2 ** i))\n"
                        "            DEVICES.append(made[0].device.type)\n"
                        "            self.input_tensors.append(made)")
    calls = _calls(tmp_path, perf).recorded("cpu", None)
    devices = calls._loaded()[1].DEVICES
    devices.clear()
    return calls, devices


def test_the_inputs_before_the_one_asked_for_are_made_on_the_meta_device(tmp_path):
    """Each timed run's fresh inputs of a task's largest case ran the timing code's loop from
    its smallest, every input made on the device inside the judge's hold (30 of them for the
    matmul tasks); those before it are made on the meta device now: shapes, no values."""
    calls, devices = _devices_seen(tmp_path, _PERF)
    x, y, out, alpha = calls.make_inputs({"input": 3}, 7, "cpu")
    assert devices == ["meta", "meta", "meta", "cpu"]
    assert x.shape == (8192,) and x.device.type == "cpu" and 0.0 < float(x.mean()) < 1.0
    assert torch.equal(x, calls.make_inputs({"input": 3}, 7, "cpu")[0])  # the same seed, the same values
    assert not torch.equal(x, calls.make_inputs({"input": 3}, 8, "cpu")[0])


@pytest.mark.parametrize("change", [
    # a tensor made before the loop, shared by every input: the one asked for would hold it
    ("        for i in range(10, 14):", "        shared = torch.rand(4)\n        for i in range(10, 14):",
     "made = (torch.rand(2 ** i), torch.rand(2 ** i))", "made = (torch.rand(2 ** i) + shared.sum(), torch.rand(2 ** i))"),
    # a size read from a tensor's values: a meta tensor has none
    ("made = (torch.rand(2 ** i), torch.rand(2 ** i))",
     "made = (torch.rand(2 ** i + int(torch.randint(1, 2, (1,)).item()) - 1), torch.rand(2 ** i))", "", ""),
])
def test_an_input_the_meta_device_cannot_make_is_made_the_whole_way(tmp_path, change):
    first_from, first_to, second_from, second_to = change
    perf = _PERF.replace("            self.input_tensors.append((torch.rand(2 ** i), torch.rand(2 ** i)))",
                         "            made = (torch.rand(2 ** i), torch.rand(2 ** i))\n"
                         "            self.input_tensors.append(made)")
    perf = perf.replace(first_from, first_to)
    if second_from:
        perf = perf.replace(second_from, second_to)
    calls = _calls(tmp_path, perf).recorded("cpu", None)

    def made_on_meta_first() -> bool:
        try:
            made = calls._run_maker(calls._loaded()[2], 7, "cpu", 4, True, deferred=True)
        except Exception:
            return False
        return recorded._meta_free(made[-1])

    assert not made_on_meta_first()
    x, y, out, alpha = calls.make_inputs({"input": 3}, 7, "cpu")
    assert x.shape == (8192,) and x.device.type == "cpu" and torch.isfinite(x).all()
    assert torch.equal(x, calls.make_inputs({"input": 3}, 7, "cpu")[0])


def test_a_kernel_that_leans_on_its_tests_imports_is_recorded_with_them(tmp_path):
    """block_sparse_attn calls torch and imports it only in its test code: GEAK-eval imports
    the file whole; the judge imports the kernel code with the tests' import put first."""
    kernel = _KERNEL.replace("import torch\n", "", 1)
    task = tritonbench.load_file(_suite(tmp_path, kernel=kernel, tests=f"import torch\n{_TESTS}"))
    assert task.baseline_source.startswith("import torch\n")
    calls = task.timing_calls.recorded("cpu", 1)
    assert (calls.entry, calls.written) == ("axpy_out", (2,))


def test_a_seed_the_timing_code_sets_is_salted_by_the_judges(tmp_path):
    perf = _PERF.replace("self.input_tensors = []", "self.input_tensors = []\n        torch.manual_seed(0)")
    calls = _calls(tmp_path, perf).recorded("cpu", 1)
    assert calls.inputs == 1  # only the inputs asked for are made
    first, second = (calls.make_inputs({"input": 0}, seed, "cpu")[0] for seed in (3, 4))
    assert not torch.equal(first, second)


def test_what_the_timing_code_leaves_uninitialised_is_made_zeros(tmp_path):
    """GEAK-eval makes `torch.empty` on the host of a fresh process (new pages: zeros); the
    judge makes inputs on the device, whose allocator hands back earlier work: read as
    indices, that ran context_attn_llama's reference into an illegal memory access."""
    perf = _PERF.replace("self.input_tensors.append((torch.rand(2 ** i), torch.rand(2 ** i)))",
                         "junk = torch.full((2 ** i,), 3.0)\n"
                         "            del junk  # its block, handed back below\n"
                         "            self.input_tensors.append((torch.rand(2 ** i), torch.empty(2 ** i)))")
    calls = _calls(tmp_path, perf).recorded("cpu", None)
    for seed in (3, 4):
        x, y, out, alpha = calls.make_inputs({"input": 2}, seed, "cpu")
        assert bool((y == 0).all()) and not bool((x == 0).all())
        (result,) = calls(x, y, out, alpha)
        assert torch.allclose(result, 0.5 * x)


@pytest.fixture(scope="module")
def evaluator():
    evaluator = Evaluator(Settings(device="interpreter", workers=2, static_gate=False,
                                   timeouts=Limits.uniform(120)))
    yield evaluator
    evaluator.close()


def test_the_reference_is_timed_by_the_judge_with_its_out_argument_judged(evaluator, tmp_path):
    task = tritonbench.load_file(_suite(tmp_path))
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace
    assert len(evaluation.latency_us) == len(evaluation.ref_latency_us) == 1  # the interpreter's one input
    assert evaluation.speedup == pytest.approx(evaluation.ref_latency_us[0] / evaluation.latency_us[0])
    # a candidate wrong on large inputs (the performance file's) passes the suite's test only
    lazy = task.baseline_source.replace("    n = x.numel()\n", "    n = x.numel()\n    alpha = alpha if n <= 1000 else 0.0\n")
    evaluation = evaluator.evaluate(task, make_candidate(task.name, lazy))
    assert evaluation.correct and evaluation.stage_reached == "correct" and evaluation.speedup is None
    assert "not timed: mismatch at correct on the performance inputs" in evaluation.error_trace


_FORGER = '''
import sys


def _forge():
    """Rewrites every timer the worker holds to report a thousandth of its time."""
    try:
        __import__("fitness.measure.timing")
    except ImportError:
        pass
    for name, module in list(sys.modules.items()):
        if name.startswith("fitness") and module is not None:
            for attr in ("bench", "time_staged", "_summarize"):
                real = getattr(module, attr, None)
                if callable(real):
                    def fake(*args, _real=real, **kwargs):
                        out = _real(*args, **kwargs)
                        for stats in out if isinstance(out, list) else [out]:
                            for key in ("median_us", "p20_us", "p80_us", "mean_us", "min_us"):
                                if isinstance(stats, dict) and key in stats:
                                    stats[key] /= 1000
                                elif hasattr(stats, key):
                                    setattr(stats, key, getattr(stats, key) / 1000)
                        return out
                    setattr(module, attr, fake)


_forge()
'''


def test_a_candidate_that_rewrites_the_workers_timers_gets_the_judges_number(evaluator, tmp_path):
    task = tritonbench.load_file(_suite(tmp_path))
    cheat = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source + _FORGER))
    honest = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source + "\n# honest twin\n"))
    assert cheat.stage_reached == honest.stage_reached == "timed", (cheat.error_trace, honest.error_trace)
    slower = compromised.slower_than_twin(cheat, honest, lambda: evaluator.evaluate(
        task, make_candidate(task.name, task.baseline_source + "\n# honest twin, again\n")), 1.5)
    assert slower is not None and slower >= 1 / 1.5, (cheat.latency_us, honest.latency_us)


def test_an_external_tasks_calls_keep_its_suites_contract_a_launch(tmp_path):
    task = tritonbench.load_file(_suite(tmp_path))
    torch_heavy = {"launches": 1, "work": {"sum": [10_000, 0]}, "input_elements": 100, "host_reads": 3}
    assert anticheat.call_verdict(task, torch_heavy) is None  # timed with the rest of the call
    assert anticheat.call_verdict(task, {**torch_heavy, "launches": 0})[0] == "no_triton_launch"
    assert anticheat.call_verdict(task, {**torch_heavy, "threads_started": 1})[0] == "cheat_background_work"
    assert anticheat.call_verdict(registry.builtin().get("vector_add"), torch_heavy)[0] == "cheat_torch_compute"


_LINEAR_RELU = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = self.linear(x).contiguous()
        out = torch.empty_like(y)
        _relu_kernel[(triton.cdiv(y.numel(), 128),)](y, out, y.numel(), BLOCK=128)
        return out
'''
_KERNELBENCH = pathlib.Path(__file__).parent / "fixtures" / "external" / "kernelbench"


def test_a_kernelbench_problem_is_recorded_with_how_its_model_is_built():
    calls = registry.load("kernelbench", str(_KERNELBENCH)).get("level2_1_Linear_ReLU").timing_calls
    reply = calls.record("cpu", None)
    assert reply == {"calls": {"arity": 1, "entry_call": {"kind": "model", "init": [24, 10],
                                                          "seed": kernelbench_models.MODEL_SEED}}}
    (x,), (again,), (other,) = (calls.make_inputs({}, seed, "cpu") for seed in (3, 3, 4))
    assert x.shape == (5, 24) and torch.equal(x, again) and not torch.equal(x, other)
    torch.manual_seed(kernelbench_models.MODEL_SEED)
    linear = torch.nn.Linear(24, 10)  # the weights KernelBench's seed gives
    assert torch.allclose(calls(x)[0], torch.relu(linear(x)))


def test_a_kernelbench_model_is_timed_by_the_judge_with_the_references_weights(evaluator):
    task = registry.load("kernelbench", str(_KERNELBENCH)).get("level2_1_Linear_ReLU")
    evaluation = evaluator.evaluate(task, make_candidate(task.name, _LINEAR_RELU))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace
    assert len(evaluation.latency_us) == len(evaluation.ref_latency_us) == 1


_ROCM_TESTS = '''
import pytest
import torch
from geak_eval.perf.ROCm.performance_utils_pytest import PytestBenchmarker, do_bench_config


def set_seed(seed=42):
    torch.manual_seed(seed)


@pytest.mark.parametrize("SIZE", [300, pytest.param(700, marks=pytest.mark.skip), 1 << 11])
@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_performance(SIZE, alpha, request):
    set_seed()
    x, y = torch.randn(SIZE), torch.randn(SIZE)
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(SIZE, meta["BLOCK"]),)
    op = lambda: _axpy_kernel[grid](x, y, out, SIZE, alpha, BLOCK=256)
    PytestBenchmarker(op_callable=op, op_name="axpy", config=do_bench_config()).run_benchmark()
'''


def _launches(tests: str = _ROCM_TESTS):
    from benchmarks.external import rocm_launches

    return rocm_launches, rocm_launches.LaunchCalls(
        task="axpy_rocm", module_source=f"{_KERNEL}\n\n{common.SEPARATOR}\n{tests}",
        kernel_names=("_axpy_kernel", "axpy_out"))


def test_a_rocm_launch_is_recorded_with_its_grid_and_meta_parameters():
    rocm_launches, calls = _launches()
    module = calls._module()
    cases = rocm_launches.parametrizations(module.test_performance)
    assert sorted((case["SIZE"], case["alpha"]) for case in cases) == [(300, 0.5), (300, 2.0), (2048, 0.5), (2048, 2.0)]
    assert (cases[3]["SIZE"], cases[3]["alpha"]) == (2048, 2.0)  # stacked marks multiply, the skipped left out
    fields = calls.record("cpu", None)["calls"]
    assert fields["entry"] == "_axpy_kernel" and fields["written"] == [2] and fields["picked"] == [0, 1, 2, 3]
    assert fields["entry_call"] == {"kind": "launch", "args": 5, "meta": ["BLOCK"]}
    calls = common.with_recorded(calls, fields)
    x, y, out, size, alpha, *grid, block = calls.make_inputs({"input": 3}, 9, "cpu")
    assert (size, alpha, grid, block) == (2048, 2.0, [8, 1, 1], 256)
    (result,) = calls(x, y, out, size, alpha, *grid, block)
    assert torch.allclose(result, 2.0 * x + y)
    assert not torch.equal(x, calls.make_inputs({"input": 3}, 10, "cpu")[0])  # the body's seed, salted


def test_a_grid_of_a_meta_parameter_the_launch_does_not_pass_is_unrecordable():
    _, calls = _launches(_ROCM_TESTS.replace('meta["BLOCK"]', 'meta["BLOCK_M"]'))
    assert "the grid of _axpy_kernel needs what the launch does not pass" in calls.record("cpu", None)["unrecordable"]


def test_an_argument_with_a_default_is_no_fixture_and_a_fixture_is_refused():
    # the suite's tests end in `request, device='cuda'`: pytest passes the default, and so
    # does the recorder (it refused 8 of the first 31 ROCm files on an H200 before)
    defaulted = _ROCM_TESTS.replace("def test_performance(SIZE, alpha, request):",
                                    "def test_performance(SIZE, alpha, request, device='cpu'):")
    assert _launches(defaulted)[1].record("cpu", None)["calls"]["entry"] == "_axpy_kernel"
    fixture = _ROCM_TESTS.replace("def test_performance(SIZE, alpha, request):",
                                  "def test_performance(SIZE, alpha, request, tmp_path):")
    assert "test_performance takes fixture(s) ['tmp_path']" in _launches(fixture)[1].record("cpu", None)["unrecordable"]


def test_a_rocm_task_is_timed_by_the_judge_on_its_recorded_launch(evaluator):
    task = registry.load("rocm", str(pathlib.Path(__file__).parent / "fixtures" / "external" / "rocm")).get("test_fx_add")
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace
    assert len(evaluation.latency_us) == len(evaluation.ref_latency_us) == 1


_HALF = _KERNEL.replace("        out = torch.empty_like(x)\n        axpy_out(x, y, out, alpha)",
                        "        out = x.new_empty(2 * x.numel())  # its second half never written\n"
                        "        axpy_out(x, y, out[:x.numel()], alpha)")
_CALLS_AXPY = _PERF.replace("        out = torch.empty_like(x)\n        axpy_out(x, y, out, alpha=0.5)\n        return out",
                            "        return axpy(x, y, 0.5)").replace("from axpy_out import axpy_out", "from axpy_out import axpy")


def test_a_reference_that_leaves_its_output_half_unwritten_is_timed_where_it_writes(evaluator, tmp_path):
    """GEAK-eval's attention_fwd_triton2 stores 96 of its output's 256 columns: its outputs
    on the performance inputs differ between two fills of what it leaves, and every
    candidate, the reference itself too, failed there as `nan` (RESULTS.md §30). The judge
    marks those places in its runs of the reference and compares a candidate's outputs only
    where the reference writes them."""
    assert _HALF != _KERNEL
    task = tritonbench.load_file(_suite(tmp_path, _CALLS_AXPY, _HALF))
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.correct) == ("timed", True), evaluation.error_trace
    # writing the places the reference leaves is no fault; leaving one it writes is
    writes_all = task.baseline_source.replace("out = x.new_empty(2 * x.numel())", "out = x.new_zeros(2 * x.numel())")
    short = task.baseline_source.replace("axpy_out(x, y, out[:x.numel()], alpha)",
                                         "axpy_out(x[:-1], y[:-1], out[:x.numel() - 1], alpha)")
    assert writes_all != task.baseline_source != short
    evaluation = evaluator.evaluate(task, make_candidate(task.name, writes_all))
    assert (evaluation.stage_reached, evaluation.correct) == ("timed", True), evaluation.error_trace
    evaluation = evaluator.evaluate(task, make_candidate(task.name, short))
    assert evaluation.stage_reached != "timed", evaluation.error_trace
    # the check itself, in this process: the output written whole is set by the inputs alone
    for kernel, unwritten in ((_KERNEL, []), (_HALF, [0, 1])):
        loaded = tritonbench.load_file(_suite(tmp_path / f"{len(unwritten)}", _CALLS_AXPY, kernel))
        recorded_calls = loaded.timing_calls.recorded("cpu", 2)
        assert fenced.undefined_inputs(recorded_calls, "cpu", loaded.tolerance) == ({}, unwritten)


def test_a_reference_that_computes_from_past_its_inputs_is_left_out(tmp_path):
    """A reference whose stores are right but whose values read past its inputs (no mask
    on the loads) is set by more than its inputs: untimed on those inputs, with why."""
    reads_past = _HALF.replace("axpy_out(x, y, out[:x.numel()], alpha)",
                               "_axpy_kernel[(triton.cdiv(2 * x.numel(), 256),)](x, y, out, 2 * x.numel(), alpha, BLOCK=256)")
    assert reads_past != _HALF
    loaded = tritonbench.load_file(_suite(tmp_path, _CALLS_AXPY, reads_past))
    recorded_calls = loaded.timing_calls.recorded("cpu", 2)
    undefined, unwritten = fenced.undefined_inputs(recorded_calls, "cpu", loaded.tolerance)
    assert set(undefined) == {0, 1} and unwritten == []
    assert "mismatch" in undefined[0] or "nan" in undefined[0], undefined


def test_an_output_written_on_some_inputs_only_is_recorded_as_written():
    """A reference's call that computes nothing on its first performance input (a cached
    prompt longer than the sequence: context_attn_llama's smallest) writes its output
    argument on the others; that argument is its output on every input, not "the call
    returns nothing and writes no argument"."""
    import torch

    from benchmarks.external.recorded import Unrecordable, written_by

    def attend(values):  # writes `out` only where the sequence is longer than the cached prompt
        q, out, seq_len, cached = values
        if seq_len > cached:
            out.copy_(q * 2)

    def made(seq_len, seed):
        return [torch.randn(4, generator=torch.Generator().manual_seed(seed)), torch.zeros(4),
                seq_len, 256]

    first, again, longer = made(4, 1), made(4, 2), made(1024, 3)
    assert written_by(attend, first, again, [longer]) == (1,)
    assert torch.equal(longer[1], longer[0] * 2)
    with pytest.raises(Unrecordable, match="writes no argument"):
        written_by(attend, made(4, 1), made(4, 2))


def test_an_output_whose_memory_held_what_the_call_writes_is_recorded_as_written():
    """An `out` made with `empty_like` gets a block the caching allocator freed, which can
    hold what the call writes already: four references on an H200 read as writing nothing
    (RESULTS.md §43). The call is run once more on random copies, and their `out` changes."""
    import torch

    from benchmarks.external.recorded import written_by

    def double(values):
        q, out, scale = values
        out.copy_(q * scale)

    def made(seed):
        q = torch.randn(8, generator=torch.Generator().manual_seed(seed))
        return [q, q * 2, 2]  # the block `out` got back holds its result

    first = made(1)
    assert written_by(double, first, made(2)) == (1,)
    assert torch.equal(first[1], first[0] * 2)


_WRITES_ITS_OUT = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def twice_into(x, out):
    _twice_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
'''

_ITS_PERF_FILE = '''
import sys
import os

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))

from twice_into import twice_into
from geak_eval.perf.performance_utils import Performance_Metrics, do_bench_config

import torch


class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('twice_into', dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(8, 11):
            self.input_tensors.append((torch.rand(2 ** i), torch.zeros(2 ** i)))

    def to_cuda(self, input_tensor):
        return tuple(t.cuda() for t in input_tensor)

    def call_op(self, input_tensor):
        x, out = input_tensor
        twice_into(x, out)
        return out
'''


def test_an_output_argument_the_reference_writes_in_place_is_recorded_as_its_output():
    """A performance file whose call_op passes an output buffer the reference fills in place
    and returns nothing (embedding_triton_kernel's shape): the recorded call's output is that
    argument. Counting call_op's calls ran the reference on the recorded call's own tensors,
    so the recording then saw the buffer already written and unchanged by the call, and the
    task was untimed as "the call returns nothing and writes no argument"."""
    from benchmarks.external.recorded import PerformanceCalls

    calls = PerformanceCalls(task="twice_into", kernel_stem="twice_into",
                             kernel_source=_WRITES_ITS_OUT, perf_source=_ITS_PERF_FILE)
    reply = calls.record(torch.device("cpu"), None)
    assert "calls" in reply, reply
    assert reply["calls"]["entry"] == "twice_into" and reply["calls"]["written"] == (1,)
    assert reply["calls"]["inputs"] == 3


_FAILS_PAST_2048 = _KERNEL.replace(
    "    n = x.numel()\n",
    "    n = x.numel()\n    if n > 2048:\n"
    "        raise RuntimeError('an illegal memory access was encountered')\n")
"""The axpy reference, failing as a device fault does on the performance file's inputs of
2^12 elements and more (the third and fourth)."""


def test_a_reference_that_fails_past_its_first_input_is_recorded_on_the_inputs_before(tmp_path):
    """GEAK-eval's timing loop fails an input whose run raises and times the others; after a
    device fault every later input of its process fails too. The recording stops at the
    first input the reference's own run fails on, naming it, and records the ones before."""
    calls = tritonbench.load_file(_suite(tmp_path, kernel=_FAILS_PAST_2048)).timing_calls
    with pytest.raises(recorded.InputFault, match="performance input 2: RuntimeError") as fault:
        calls.recorded("cpu", None)
    assert fault.value.at == 2  # inputs of 2^10, 2^11 run; 2^12 raises
    assert calls.recorded("cpu", 2).inputs == 2


def test_a_task_whose_reference_fails_on_a_later_input_is_timed_on_the_inputs_before(
        evaluator, tmp_path, monkeypatch):
    """Through the checker: its recording fails on the third of three inputs, so the walk
    records the first two again and times the baseline on both."""
    from fitness.judge import performance_inputs

    monkeypatch.setattr(performance_inputs, "INTERPRETER_PERF_INPUTS", 3)
    task = tritonbench.load_file(_suite(tmp_path, kernel=_FAILS_PAST_2048))
    task = dataclasses.replace(task, name="axpy_out_fails_late")
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace
    assert len(evaluation.latency_us) == len(evaluation.ref_latency_us) == 2


def test_a_task_whose_call_op_applies_a_function_class_is_timed_by_the_judge(evaluator, tmp_path):
    task = tritonbench.load_file(_suite(tmp_path, _APPLIES_ON_THE_CLASS))
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert evaluation.stage_reached == "timed", evaluation.error_trace[-2000:]
    assert evaluation.correct and evaluation.latency_us


def test_a_task_whose_call_returns_a_none_state_is_timed_by_the_judge(evaluator, tmp_path):
    task = tritonbench.load_file(_suite(tmp_path, _CALLS_WITHOUT_STATE, _RETURNS_NO_STATE))
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert evaluation.stage_reached == "timed", evaluation.error_trace[-2000:]
    assert evaluation.correct and evaluation.latency_us
    wrong = task.baseline_source.replace("return out, (out.sum() if final_state else None)",
                                         "return out, out")  # a second output the reference has not
    evaluation = evaluator.evaluate(task, make_candidate(task.name, wrong))
    assert not evaluation.correct or evaluation.stage_reached != "timed", evaluation


def test_a_task_whose_call_op_calls_the_module_twice_is_timed_whole_by_the_judge(evaluator, tmp_path):
    task = tritonbench.load_file(_suite(tmp_path, _TWO_CALLS))
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert evaluation.stage_reached == "timed", evaluation.error_trace[-2000:]
    assert evaluation.correct and evaluation.latency_us
    # the second call is the candidate's too: a module whose axpy_out is right once and
    # wrong when its output is fed back in passes the suite's test and fails the timed inputs
    fed_back = task.baseline_source.replace(
        "    n = x.numel()\n", "    n = x.numel()\n    alpha = alpha if x.data_ptr() != out.data_ptr() else 2 * alpha\n")
    assert fed_back != task.baseline_source
    evaluation = evaluator.evaluate(task, make_candidate(task.name, fed_back))
    assert evaluation.stage_reached != "timed", evaluation.error_trace[-2000:]


def _crowded(mark: pathlib.Path, times: int) -> str:
    """The axpy performance file, whose input making runs out of device memory the first
    `times` times it runs (a neighbour's inputs, as on a GPU shared by 8 walks)."""
    return _PERF.replace("        self.input_tensors = []\n", (
        "        self.input_tensors = []\n"
        f"        mark = pathlib.Path({str(mark)!r})\n"
        "        if len(mark.read_text()) < " + str(times) + ":\n"
        "            mark.write_text(mark.read_text() + 'x')\n"
        "            raise torch.OutOfMemoryError('CUDA out of memory: a neighbour holds it')\n"),
        1).replace("import torch\n", "import pathlib\nimport torch\n", 1)


@pytest.mark.parametrize("times", [1, 2])
def test_running_out_of_memory_on_the_performance_inputs_goes_again_alone(tmp_path, times):
    """Beside other walks, the recording of the performance inputs ran out of memory and the
    task was left untimed at once: the walk now goes again with the device to itself, and
    only a walk alone that runs out too is untimed with it (never failed: its checked runs
    were right)."""
    mark = tmp_path / "crowded"
    mark.write_text("")
    task = tritonbench.load_file(_suite(tmp_path / "suite", _crowded(mark, times)))
    evaluator = Evaluator(Settings(device="interpreter", workers=2, static_gate=False,
                                   timeouts=Limits.uniform(120)))
    try:
        evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
        retries = evaluator.stats()["retries"]
    finally:
        evaluator.close()
    assert len(mark.read_text()) == times and retries == 1
    if times == 1:
        assert evaluation.stage_reached == "timed", evaluation.error_trace[-2000:]
    else:
        assert (evaluation.stage_reached, evaluation.correct) == ("correct", True)
        assert "out of memory: a neighbour holds it" in evaluation.error_trace


_KEYWORD_ONLY = _KERNEL.replace("def axpy_out(x, y, out, alpha):", "def axpy_out(x, y, /, *, out, alpha):").replace(
    "axpy_out(x, y, out, alpha)\n        return out", "axpy_out(x, y, out=out, alpha=alpha)\n        return out")
_KEYWORD_TESTS = _TESTS.replace("axpy_out(x, y, out, 0.5)", "axpy_out(x, y, out=out, alpha=0.5)")
_PASSES_KEYWORDS = _PERF.replace("axpy_out(x, y, out, alpha=0.5)", "axpy_out(x, y, out=out, alpha=0.5)")


def test_a_call_of_keyword_only_arguments_is_recorded_with_their_names(tmp_path):
    """FlagGems' generated wrappers take their output by keyword only
    (`isfinite_func_wrapper_rank_1(in0, /, *, out0)`, 3 TritonBench-revised tasks): the
    keyword arguments are the last inputs, passed by name to the reference and the candidate."""
    task = tritonbench.load_file(_suite(tmp_path, _PASSES_KEYWORDS, _KEYWORD_ONLY, _KEYWORD_TESTS))
    calls = task.timing_calls.recorded("cpu", None)
    assert (calls.entry, calls.arity, calls.written, calls.keywords) == ("axpy_out", 4, (2,), ("out", "alpha"))
    assert calls.entry_call == {"kind": "keywords", "names": ["out", "alpha"]}
    x, y, out, alpha = calls.make_inputs({"input": 1}, 7, "cpu")
    assert alpha == 0.5 and torch.allclose(calls(x, y, out, alpha)[0], 0.5 * x + y)


def test_a_task_whose_call_passes_keyword_only_arguments_is_timed_by_the_judge(evaluator, tmp_path):
    task = tritonbench.load_file(_suite(tmp_path, _PASSES_KEYWORDS, _KEYWORD_ONLY, _KEYWORD_TESTS))
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace[-2000:]


_TAKES_A_SHAPE = _KERNEL + '''

def axpy_shaped(x, y, shape, alpha):
    assert isinstance(shape, tuple), f"the shape came as a {type(shape).__name__}"
    out = torch.empty(shape, device=x.device)
    axpy_out(x, y, out, alpha)
    return out
'''
_SHAPE_TESTS = _TESTS.replace("    axpy_out(x, y, out, 0.5)\n    return {\"test_case_1\": out}",
                              "    return {\"test_case_1\": axpy_shaped(x, y, (300,), 0.5)}")
_PASSES_A_SHAPE = _PERF.replace("from axpy_out import axpy_out", "from axpy_out import axpy_shaped").replace(
    "out = torch.empty_like(x)\n        axpy_out(x, y, out, alpha=0.5)\n        return out",
    "return axpy_shaped(x, y, tuple(x.shape), 0.5)")


def test_a_task_whose_call_passes_a_tuple_of_sizes_is_timed_by_the_judge(evaluator, tmp_path):
    """layer_norm_triton passes its `normalized_shape`, a tuple of ints: it crosses to the
    worker in its spec, a tuple again (JSON has lists only)."""
    task = tritonbench.load_file(_suite(tmp_path, _PASSES_A_SHAPE, _TAKES_A_SHAPE, _SHAPE_TESTS))
    calls = task.timing_calls.recorded("cpu", None)
    assert (calls.entry, calls.arity) == ("axpy_shaped", 4)
    assert calls.make_inputs({"input": 1}, 3, "cpu")[2] == (2048,)
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace[-2000:]


_TWO_FUNCTIONS = _KERNEL[:_KERNEL.index("class _Axpy")] + '''
def axpy_pre(x):
    return x * 2.0
'''
_BOTH_TESTS = _TESTS.replace("axpy_out(x, y, out, 0.5)", "axpy_out(axpy_pre(x), y, out, 0.5)")
_CALLS_BOTH = _PERF.replace("from axpy_out import axpy_out", "from axpy_out import axpy_pre, axpy_out").replace(
    "axpy_out(x, y, out, alpha=0.5)", "axpy_out(axpy_pre(x), y, out, alpha=0.5)")


def test_a_task_whose_call_op_imports_a_function_its_entry_never_calls_is_timed_by_the_judge(
        evaluator, tmp_path):
    """chunk_gated_attention's performance file imports fwd_pre and fwd_inner and calls both;
    the entry (fwd_pre) never calls fwd_inner, and the module the worker loaded had it blanked
    as code that never runs: "cannot import name 'fwd_inner'" left it untimed on an H200
    (RESULTS.md §36). What the timed call imports from the module is kept."""
    task = tritonbench.load_file(_suite(tmp_path, _CALLS_BOTH, _TWO_FUNCTIONS, _BOTH_TESTS))
    task = dataclasses.replace(task, name="axpy_out_with_a_pre")  # its own reference outputs
    calls = task.timing_calls.recorded("cpu", None)
    assert calls.entry == "axpy_pre" and calls.entry_call["kind"] == "call_op"
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace[-2000:]


_TAKES_A_CONFIG = _KERNEL[:_KERNEL.index("class _Axpy")] + '''
class Config:
    def __init__(self, alpha):
        self.alpha = alpha


def axpy_configured(x, y, out, config):
    axpy_out(x, y, out, config.alpha)
    return out
'''
_CONFIG_TESTS = _TESTS.replace("axpy_out(x, y, out, 0.5)", "axpy_configured(x, y, out, Config(0.5))")
_MAKES_A_CONFIG = _PERF.replace("from axpy_out import axpy_out", "from axpy_out import Config, axpy_configured").replace(
    "axpy_out(x, y, out, alpha=0.5)\n        return out", "return axpy_configured(x, y, out, Config(0.5))")


def test_a_task_whose_call_op_makes_an_argument_that_cannot_cross_is_timed_whole_by_the_judge(
        evaluator, tmp_path):
    """int_scaled_matmul's call_op makes a `Config` of the kernel module from its input's
    block size and passes it to its one call: the call cannot cross to the worker, call_op
    whole can (its input's leaves are tensors), and is the timed call, as GEAK-eval times it
    (untimed as "cannot be recorded" on an H200, RESULTS.md §38)."""
    task = tritonbench.load_file(_suite(tmp_path, _MAKES_A_CONFIG, _TAKES_A_CONFIG, _CONFIG_TESTS))
    task = dataclasses.replace(task, name="axpy_out_configured")  # its own reference outputs
    calls = task.timing_calls.recorded("cpu", None)
    assert (calls.entry, calls.arity, calls.entry_call["kind"]) == ("axpy_configured", 2, "call_op")
    x, y = calls.make_inputs({"input": 1}, 3, "cpu")
    (out,) = calls(x, y)
    assert torch.allclose(out, 0.5 * x + y)
    evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace[-2000:]
    # the config's class is the candidate's too: one whose Config doubles alpha is wrong
    doubled = task.baseline_source.replace("self.alpha = alpha", "self.alpha = 2 * alpha")
    assert doubled != task.baseline_source
    evaluation = evaluator.evaluate(task, make_candidate(task.name, doubled))
    assert not evaluation.correct, evaluation
