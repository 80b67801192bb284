"""Running an external suite's own harness on candidates: sandboxed workers leased from a
candidate pool under the Triton interpreter, the trusted comparison, failure kinds."""

import concurrent.futures
import dataclasses
import math
import pathlib
import time

import pytest
import torch

from benchmarks import registry
from evo.records import make_candidate
from fitness.device import detect
from fitness.processes.device_lock import DeviceLock
import fitness
from fitness.judge import harness, harness_outputs, performance_inputs
from fitness.judge.cascade import Cascade
from fitness.settings import Limits
from fitness.processes.pool import WorkerPool

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "external"
CANDIDATES = FIXTURES / "candidates"


@pytest.fixture(scope="module")
def seam(tmp_path_factory):
    """The sandboxed candidate pool, the checkers (a TritonBench-revised candidate is timed
    on its performance inputs by the judge) and the device gate, as an Evaluator wires them."""
    device = detect("interpreter")
    pool = WorkerPool(device, 3, "candidate", str(tmp_path_factory.mktemp("workers")))
    checkers = WorkerPool(device, 2, "checker", str(tmp_path_factory.mktemp("checkers")))
    yield dict(device=device, candidates=pool, checkers=checkers,
               device_lock=DeviceLock(exclusive_timing=device.timing_meaningful))
    pool.close()
    checkers.close()


@pytest.fixture(scope="module")
def threads(seam):
    """Threads that live as long as the pool: a sandboxed worker dies with the thread that
    spawned it (bwrap --die-with-parent), and a leased worker's replacement is spawned by
    the thread that returns it."""
    with concurrent.futures.ThreadPoolExecutor(3) as threads:
        yield threads


def _run_limit(seconds: float) -> Limits:
    """Stage limits whose harness run (import + compile + check) is `seconds`."""
    return Limits(import_s=seconds / 3, compile_s=seconds / 3, check_s=seconds / 3)


@pytest.fixture(scope="module")
def runner(seam):
    return Cascade(**seam, limits=_run_limit(240.0), harness_seed=1234)


@pytest.fixture(scope="module")
def ungated(seam):
    """A runner with the static gate off: for what the sandbox and the comparison catch on
    their own (candidates the gate stops first)."""
    return Cascade(**seam, limits=_run_limit(240.0), harness_seed=1234, static_gate=False)


def _task(suite, folder, name):
    return registry.load(suite, str(FIXTURES / folder)).get(name)


def _evaluate(runner, task, source_or_file):
    source = (CANDIDATES / source_or_file).read_text() if source_or_file.endswith(".py") else source_or_file
    return runner.evaluate(task, make_candidate(task.name, source))


@pytest.fixture(scope="module")
def scale_shift():
    return _task("tritonbench-revised", "tritonbench", "scale_shift")


@pytest.mark.slow
def test_reference_kernels_pass_their_own_harness(runner, threads):
    tasks = [_task("tritonbench-revised", "tritonbench", "scale_shift"), _task("rocm", "rocm", "test_fx_add"),
             _task("kernelbench", "kernelbench", "level1_1_Scale_And_Add")]
    # harness.reference raises HarnessError on a failure
    outputs = list(threads.map(lambda task: harness.reference(runner, task), tasks))
    assert all(len(saved.structure) > 0 and saved.values for saved in outputs)


def test_reference_as_candidate_matches_itself_through_the_checker(runner):
    task = _task("tritonbench-revised", "tritonbench", "row_max")  # numpy arrays, a tuple, an int
    evaluation = _evaluate(runner, task, task.baseline_source)
    assert evaluation.failure_kind is None, evaluation.error_trace
    assert evaluation.correct and evaluation.call_ok and evaluation.stage_reached == "correct"
    assert evaluation.case_names == ("test_case_1", "test_case_2")
    assert evaluation.max_abs_err == (0.0, 0.0)
    assert evaluation.harness_version == fitness.EXTERNAL_HARNESS_VERSION


def test_correct_candidate_passes_and_finds_no_secret_in_its_environment(ungated, scale_shift, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    evaluation = _evaluate(ungated, scale_shift, "tb_scale_shift_env_probe.py")
    assert evaluation.correct, evaluation.error_trace
    assert evaluation.case_names == ("test_case_1", "test_case_2", "test_case_3")
    # timed by the judge on its performance file's first input (the interpreter's one), the
    # speedup GEAK-eval's
    assert evaluation.stage_reached == "timed" and evaluation.failure_kind is None
    assert len(evaluation.latency_us) == len(evaluation.ref_latency_us) == performance_inputs.INTERPRETER_PERF_INPUTS
    assert evaluation.speedup == pytest.approx(evaluation.ref_latency_us[0] / evaluation.latency_us[0])
    assert evaluation.compile_s > 0 and evaluation.bench_s > 0


def test_tritonbench_task_without_a_performance_file_is_correct_untimed_and_says_why(runner):
    task = _task("tritonbench-revised", "tritonbench", "row_max")
    evaluation = _evaluate(runner, task, task.baseline_source)
    assert evaluation.correct and evaluation.stage_reached == "correct"
    assert evaluation.speedup is None and evaluation.latency_us == ()
    assert "no performance file row_max_perf.py" in evaluation.error_trace


def test_tritonbench_timing_runs_the_performance_inputs_not_the_tests(runner, scale_shift):
    # right on every input of the test code (at most 1000 elements), broken on the
    # performance file's first input (1024): correct by the suite's test, untimed, and why
    source = scale_shift.baseline_source.replace(
        "    out = torch.empty_like(x)\n",
        "    if x.numel() > 1000:\n        raise ValueError('only small inputs')\n"
        "    out = torch.empty_like(x)\n", 1)
    evaluation = _evaluate(runner, scale_shift, source)
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("correct", None)
    assert evaluation.correct and evaluation.speedup is None
    assert "not timed: runtime_error at run on the performance inputs" in evaluation.error_trace
    assert "only small inputs" in evaluation.error_trace


_TRUSTED_RULE = "outside |out - ref| <= atol + rtol*|ref|"  # fitness.judge.checking's words


def test_wrong_result_is_a_mismatch_found_by_the_checker(runner, scale_shift):
    evaluation = _evaluate(runner, scale_shift, "tb_scale_shift_wrong.py")
    assert not evaluation.correct and evaluation.call_ok
    assert evaluation.failure_kind == "mismatch"
    assert _TRUSTED_RULE in evaluation.error_trace


@pytest.mark.slow
def test_candidate_disabling_assert_close_is_still_caught(runner, ungated):
    task = _task("rocm", "rocm", "test_fx_add")
    gated = _evaluate(runner, task, "rocm_add_patches_checker.py")
    assert (gated.failure_kind, gated.stage_reached) == ("policy_violation", "syntax")
    evaluation = _evaluate(ungated, task, "rocm_add_patches_checker.py")
    assert not evaluation.correct
    assert evaluation.failure_kind == "mismatch"
    assert _TRUSTED_RULE in evaluation.error_trace  # the trusted comparison's words, not pytest's


def test_static_gate_runs_before_any_process(runner, scale_shift, seam):
    kernelbench = _task("kernelbench", "kernelbench", "level1_1_Scale_And_Add")
    respawns = seam["candidates"].respawns
    for task, source in ((scale_shift, "tb_scale_shift_env_probe.py"), (scale_shift, "tb_scale_shift_crash.py"),
                         (kernelbench, kernelbench.baseline_source)):
        evaluation = _evaluate(runner, task, source)
        assert (evaluation.failure_kind, evaluation.stage_reached) == ("policy_violation", "syntax")
        assert evaluation.error_trace.startswith("line ")
    assert seam["candidates"].respawns == respawns  # no worker ran, so none was retired


@pytest.mark.slow
def test_a_worker_that_ran_a_harness_is_retired(ungated, scale_shift, seam):
    harness.reference(ungated, scale_shift)  # the evaluating cascade's: its run is not counted
    respawns = seam["candidates"].respawns
    evaluation = _evaluate(ungated, scale_shift, "tb_scale_shift_torch_only.py")  # the lint refuses it first
    assert evaluation.failure_kind == "no_triton_launch"
    assert seam["candidates"].respawns == respawns + 1


@pytest.mark.slow
def test_broken_candidates_fail_with_their_kinds(ungated, scale_shift, threads):
    expected = {"tb_scale_shift_raises.py": "runtime_error", "tb_scale_shift_crash.py": "worker_crash",
                "tb_scale_shift_torch_only.py": "no_triton_launch"}
    evaluations = dict(zip(expected, threads.map(lambda name: _evaluate(ungated, scale_shift, name), expected)))
    for name, kind in expected.items():
        assert not evaluations[name].correct
        assert evaluations[name].failure_kind == kind, (name, evaluations[name].error_trace)
    assert "_scale_shift_kernel" in evaluations["tb_scale_shift_raises.py"].error_trace


def test_checks_that_need_no_process(runner, scale_shift):
    syntax = _evaluate(runner, scale_shift, "def scale_shift(x:\n")
    assert (syntax.failure_kind, syntax.stage_reached) == ("syntax_error", "syntax")
    missing = _evaluate(runner, scale_shift, "def other(x):\n    return x\n")
    assert missing.failure_kind == "missing_entry_point" and "scale_shift" in missing.error_trace
    amd_only = _task("rocm", "rocm", "test_fx_waves")
    skipped = _evaluate(runner, amd_only, amd_only.baseline_source)
    assert skipped.failure_kind == "unsupported_on_backend" and "waves_per_eu" in skipped.error_trace


@pytest.mark.slow
def test_hung_kernel_is_killed(seam, scale_shift):
    limit_s = 8.0
    quick = Cascade(**seam, limits=_run_limit(limit_s), harness_seed=1)
    harness.reference(quick, scale_shift)  # outside the timed window: references get their own limit
    start = time.monotonic()
    evaluation = _evaluate(quick, scale_shift, "tb_scale_shift_hang.py")
    elapsed_s = time.monotonic() - start
    assert evaluation.failure_kind == "timeout"
    assert elapsed_s < limit_s + 5.0


@pytest.mark.slow
def test_kernelbench_triton_modelnew_passes_and_the_pytorch_baseline_launches_nothing(runner, ungated):
    task = _task("kernelbench", "kernelbench", "level1_1_Scale_And_Add")
    evaluation = _evaluate(runner, task, "kb_scale_and_add_triton.py")
    assert evaluation.correct, evaluation.error_trace
    assert evaluation.case_names == ("trial 0", "trial 1")
    _assert_timed(evaluation, cases=1)  # by the judge, on get_inputs() made anew
    baseline = _evaluate(ungated, task, task.baseline_source)  # the gate stops it first
    assert baseline.failure_kind == "no_triton_launch"


AUTOTUNE = """LAUNCHED = []  # the BLOCK_SIZE of every launch, the autotuner's benchmark launches included


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": b}, pre_hook=lambda nargs, b=b: LAUNCHED.append(b))
                          for b in (128, 256, 512)], key=["n_elements"])
@triton.jit
def _scale_shift_kernel("""


def test_a_reference_is_run_for_its_outputs_with_each_autotuner_held_to_one_config(runner, scale_shift):
    # TritonBench-revised's int8_dequant_matmul reference tunes 418 configs a shape and was
    # still tuning after 100 s on an H200: the outputs need one config, not the fastest
    autotuned = scale_shift.baseline_source.replace("@triton.jit\ndef _scale_shift_kernel(", AUTOTUNE)
    autotuned = autotuned.replace(", BLOCK_SIZE=256)", ")")
    assert "LAUNCHED" in autotuned and "BLOCK_SIZE=256" not in autotuned
    task = dataclasses.replace(scale_shift, name="scale_shift_autotuned_reference", baseline_source=autotuned,
                               harness=scale_shift.harness + "\nresult_gold['launched'] = torch.tensor(LAUNCHED)\n")
    outputs = harness.reference(runner, task)
    assert outputs.values[outputs.structure["launched"]["leaf"]].tolist() == [128, 128, 128]  # 3 calls
    candidate = _evaluate(runner, task, autotuned)  # a candidate tunes as it likes
    assert candidate.failure_kind == "wrong_shape" and "launched" in candidate.error_trace  # 12 launches


@pytest.mark.slow
def test_broken_reference_is_a_harness_error_not_the_candidates(ungated, scale_shift):
    broken = dataclasses.replace(scale_shift, name="scale_shift_broken_reference",
                                 baseline_source=scale_shift.baseline_source + "\nraise RuntimeError('broken')\n")
    evaluation = _evaluate(ungated, broken, "tb_scale_shift_env_probe.py")
    assert evaluation.failure_kind == "harness_error" and not evaluation.correct
    assert "reference of 'scale_shift_broken_reference' failed its own harness" in evaluation.error_trace


@pytest.mark.slow
def test_a_reference_out_of_memory_beside_other_walks_goes_again_alone(seam, scale_shift):
    """The reference's own harness run ran out of device memory beside 7 other walks on an
    H200 and was remembered as broken (context_attn_fwd, chunk_retention): out of memory is
    now its own kind, and the walk asking goes again with the device to itself; a reference
    out of memory alone too is the harness's error, said as such."""
    crowded = dataclasses.replace(scale_shift, name="scale_shift_out_of_memory", baseline_source=(
        scale_shift.baseline_source + "\n\ndef scale_shift(*args, **kwargs):\n"
        "    raise RuntimeError('Triton Error [CUDA]: out of memory')\n"))
    judge = Cascade(**seam, limits=_run_limit(240.0), harness_seed=1234, static_gate=False)
    evaluation = _evaluate(judge, crowded, scale_shift.baseline_source)
    assert evaluation.failure_kind == "harness_error" and not evaluation.correct
    assert "failed its own harness on interpreter (out_of_memory at stage run)" in evaluation.error_trace
    assert judge.meter.retries == 1  # the first try beside other walks, the second alone


def _assert_timed(evaluation, cases):
    """A timed verdict: per-case latencies of candidate and reference, and their speedup."""
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("timed", None), evaluation.error_trace
    assert evaluation.correct and not evaluation.timing_meaningful  # interpreter: wall clock
    assert len(evaluation.latency_us) == len(evaluation.ref_latency_us) == cases
    assert all(latency > 0 for latency in evaluation.latency_us + evaluation.ref_latency_us)
    ratios = [ref / lat for ref, lat in zip(evaluation.ref_latency_us, evaluation.latency_us)]
    assert evaluation.worst_speedup == pytest.approx(min(ratios))
    assert evaluation.speedup == pytest.approx(math.prod(ratios) ** (1 / cases))
    assert evaluation.bench_s > 0


@pytest.mark.slow
def test_correct_rocm_candidate_is_timed_against_the_reference_and_the_reference_is_cached(runner):
    task = _task("rocm", "rocm", "test_fx_add")
    first = _evaluate(runner, task, task.baseline_source)
    _assert_timed(first, cases=1)  # the first test_performance parametrization: the interpreter's one
    second = _evaluate(runner, task, task.baseline_source + "\n# same kernel, another id\n")
    _assert_timed(second, cases=1)
    assert second.ref_latency_us == first.ref_latency_us  # cached per (task, case, device, version)
    assert "has no test_performance" in _task("rocm", "rocm", "test_fx_rowsum").untimed_reason


@pytest.mark.slow
def test_candidate_hanging_on_the_performance_inputs_is_killed_and_left_untimed(seam):
    limit_s = 8.0
    task = _task("kernelbench", "kernelbench", "level1_1_Scale_And_Add")
    quick = Cascade(**seam, limits=Limits(check_s=limit_s, bench_s=limit_s), harness_seed=1, static_gate=False)
    started = time.monotonic()
    evaluation = _evaluate(quick, task, "kb_scale_and_add_hangs_when_timed.py")
    # right on the suite's two trials, then it spins on the judge's third call: the suite's
    # verdict stands, and the candidate is not timed
    assert (evaluation.stage_reached, evaluation.failure_kind) == ("correct", None), evaluation.error_trace
    assert evaluation.correct and evaluation.speedup is None
    assert "not timed: timeout at correct on the performance inputs" in evaluation.error_trace
    assert time.monotonic() - started < 4 * limit_s + 30.0


def test_every_case_is_judged_and_listed_the_first_failure_is_the_verdict():
    structure = {name: {"leaf": at} for at, name in enumerate(("test_a", "test_b", "test_c", "test_d"))}
    expected = harness_outputs.Outputs(structure, [torch.ones(4), torch.ones(4), torch.ones(4), torch.ones(4)])
    actual = harness_outputs.Outputs(structure, [torch.ones(4), torch.full((4,), 3.0), torch.ones(2),
                                                 torch.full((4,), 1.5)])
    errors = harness_outputs.compare(expected, actual, {"float32": (1e-5, 1e-5)})
    verdict = errors.first_mismatch()
    assert verdict.kind == "mismatch"  # test_b, the first wrong case
    assert verdict.detail.startswith("wrong on 3 of 4 cases ('test_b', 'test_c', 'test_d'); test_b: ")
    fields = errors.fields()
    names, abs_errors, rel_errors = fields["case_names"], fields["max_abs_err"], fields["rel_err"]
    assert names == ("test_a", "test_b", "test_c", "test_d")
    assert abs_errors[0] == 0.0 and abs_errors[1] == 2.0 and abs_errors[3] == 0.5
    assert math.isnan(abs_errors[2]) and math.isnan(rel_errors[2])  # wrong shape: no errors
