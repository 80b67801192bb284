"""Every failure kind is produced and classified; faults never stop the pool."""

import concurrent.futures
import dataclasses
import time

import pytest

from benchmarks.registry import builtin
from fitness_limits import FITNESS_TEST_LIMITS
from evo.records import make_candidate

VECTOR_ADD = builtin().get("vector_add")

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"

ADD_KERNEL = HEADER + '''
@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x SIGN y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    PRE_RETURN
    return out
'''


def add_source(sign="+", pre_return="pass"):
    return ADD_KERNEL.replace("SIGN", sign).replace("PRE_RETURN", pre_return)


SPIN_FOREVER = HEADER + '''
@triton.jit
def _spin_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    count = tl.program_id(axis=0) * 0
    while count < 1:
        count = count * 1


def vector_add(x, y):
    out = torch.empty_like(x)
    _spin_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out
'''

OUT_OF_BOUNDS = HEADER + '''
@triton.jit
def _oob_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE) + 100_000_000
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))


def vector_add(x, y):
    out = torch.empty_like(x)
    _oob_kernel[(1,)](x, out, x.numel(), BLOCK_SIZE=1024)
    return out
'''

COMPILE_ERROR = HEADER + '''
@triton.jit
def _bad_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, 1000)  # not a power of two: rejected by Triton
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))


def vector_add(x, y):
    out = torch.empty_like(x)
    _bad_kernel[(1,)](x, out, x.numel(), BLOCK_SIZE=1024)
    return out
'''

# name -> (source, failure kind, stage reached). Cases in UNGATED run with the lint off, to test
# the worker's own classification of what the lint refuses first (os) or leaves to the worker.
CASES = {
    "syntax": ("def vector_add(x, y)\n    return x\n", "syntax_error", "syntax"),
    "import": ("import no_such_module_anywhere\n\ndef vector_add(x, y):\n"
               "    return no_such_module_anywhere.add(x, y)\n", "import_error", "import"),
    "exit_at_import": ("import sys\nsys.exit(4)\n", "import_error", "import"),
    "no_entry_point": ("def vector_sum(x, y):\n    return x\n", "missing_entry_point", "import"),
    "signature": (add_source().replace("def vector_add(x, y):", "def vector_add(x):"), "signature_mismatch",
                  "import"),
    "compile": (COMPILE_ERROR, "compile_error", "compile"),
    "raises": (add_source(pre_return="raise ValueError('boom in the wrapper')"),
               "runtime_error", "run"),
    "sys_exit_in_call": (add_source(pre_return="import sys; sys.exit(2)"), "runtime_error", "run"),
    "out_of_bounds": (OUT_OF_BOUNDS, "illegal_memory_access", "run"),
    "wrong_math": (add_source(sign="-"), "mismatch", "correct"),
    "returns_none": (add_source(pre_return="return None"), "wrong_type", "run"),
    "os_exit": (add_source(pre_return="import os; os._exit(7)"), "worker_crash", "run"),
    "segfault": (add_source(pre_return="import ctypes; ctypes.string_at(0)"), "worker_crash", "run"),
    "gate": (add_source(pre_return="import os"), "policy_violation", "syntax"),
    "host_loop": (add_source(pre_return="while True:\n        pass"), "timeout", "run"),
    "host_loop_at_import": (HEADER + "while True:\n    pass\n", "timeout", "import"),
}
UNGATED = {"import", "exit_at_import", "sys_exit_in_call", "os_exit", "segfault"}


@pytest.fixture(scope="module")
def verdicts(fitness_evaluator, ungated_evaluator):
    def evaluate(item):
        name, (source, _, _) = item
        evaluator = ungated_evaluator if name in UNGATED else fitness_evaluator
        return evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", source))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(CASES, pool.map(evaluate, CASES.items())))


@pytest.mark.parametrize("name", CASES)
def test_failure_is_classified(name, verdicts):
    _, kind, stage = CASES[name]
    evaluation = verdicts[name]
    assert (evaluation.failure_kind, evaluation.stage_reached) == (kind, stage), (
        f"{name}: {evaluation.failure_kind} at {evaluation.stage_reached}: "
        f"{evaluation.error_trace[-800:]}")
    assert not evaluation.correct and evaluation.speedup is None
    assert evaluation.error_trace.strip()


@pytest.mark.parametrize("name", ["host_loop", "host_loop_at_import"])
def test_host_loop_is_ended_by_the_stall_limit_not_the_stage_limit(name, verdicts):
    # The stage limit (10 s) would also say "timeout"; the stall watch names itself.
    assert "stall limit" in verdicts[name].error_trace, verdicts[name].error_trace


def test_runtime_error_trace_names_the_candidate_file(verdicts):
    trace = verdicts["raises"].error_trace
    assert "boom in the wrapper" in trace and 'File "candidate.py"' in trace


def test_segfault_names_the_signal(verdicts):
    assert "SIGSEGV" in verdicts["segfault"].error_trace


def test_correct_baseline_reaches_timed_with_every_field(fitness_evaluator):
    evaluation = fitness_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", add_source()))
    cases = VECTOR_ADD.interpreter_cases
    assert evaluation.correct and evaluation.call_ok and evaluation.failure_kind is None
    assert evaluation.stage_reached == "timed"
    assert evaluation.case_names == tuple(case.name for case in cases)
    for per_case in (evaluation.max_abs_err, evaluation.rel_err, evaluation.latency_us,
                     evaluation.ref_latency_us, evaluation.latency_p20_us, evaluation.latency_p80_us):
        assert len(per_case) == len(cases)
    assert all(p20 <= med <= p80 for p20, med, p80 in zip(
        evaluation.latency_p20_us, evaluation.latency_us, evaluation.latency_p80_us))
    assert evaluation.speedup > 0 and evaluation.worst_speedup <= evaluation.speedup * 1.000001
    assert evaluation.timing_meaningful is False and evaluation.backend == "interpreter"
    assert evaluation.compile_s > 0 and evaluation.check_s > 0 and evaluation.bench_s > 0


def test_every_evaluation_meets_inputs_nobody_could_predict(fitness_evaluator):
    candidate = make_candidate("vector_add", add_source(sign="-"))
    first = fitness_evaluator.evaluate(VECTOR_ADD, candidate)
    second = fitness_evaluator.evaluate(VECTOR_ADD, candidate)
    assert first.failure_kind == second.failure_kind == "mismatch"
    assert first.error_trace != second.error_trace  # "got ..., expected ..." from other inputs


@pytest.mark.slow
def test_hung_kernel_is_killed_and_next_candidate_is_scored(fitness_evaluator):
    limit_s = FITNESS_TEST_LIMITS["compile_s"]
    start = time.monotonic()
    hung = fitness_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", SPIN_FOREVER))
    elapsed_s = time.monotonic() - start
    assert hung.failure_kind == "timeout", hung.error_trace
    assert limit_s <= elapsed_s < limit_s + 5.0
    after = fitness_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", add_source()))
    assert after.correct, after.error_trace


@pytest.mark.slow
def test_output_flood_is_cut_off_and_next_candidate_is_scored(fitness_evaluator):
    flood = add_source(pre_return="for _ in range(100):\n        print('x' * (1 << 20))")
    start = time.monotonic()
    evaluation = fitness_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", flood))
    assert evaluation.failure_kind == "output_flood", evaluation.error_trace
    assert len(evaluation.error_trace) < 10_000
    assert time.monotonic() - start < 30
    after = fitness_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", add_source()))
    assert after.correct, after.error_trace


@pytest.mark.slow
def test_dying_workers_do_not_stop_the_pool(ungated_evaluator):
    respawns_before = ungated_evaluator.stats()["respawns"]
    retries_before = ungated_evaluator.stats()["retries"]
    for code in (11, 12):
        crash = add_source(pre_return=f"import os; os._exit({code})")
        assert ungated_evaluator.evaluate(
            VECTOR_ADD, make_candidate("vector_add", crash)).failure_kind == "worker_crash"
    stats = ungated_evaluator.stats()
    assert stats["respawns"] >= respawns_before + 4  # each crash is tried on a fresh worker once more
    assert stats["retries"] == retries_before + 2
    after = ungated_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", add_source()))
    assert after.correct, after.error_trace


def test_out_of_memory_is_walked_once_more_before_it_is_blamed(ungated_evaluator):
    # On a GPU the pool's processes share the device's memory: a neighbour may have taken it.
    retries_before = ungated_evaluator.stats()["retries"]
    hungry = add_source(pre_return="raise torch.OutOfMemoryError('CUDA out of memory. Tried to "
                                   "allocate 1.54 GiB')")
    evaluation = ungated_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", hungry))
    assert (evaluation.failure_kind, evaluation.stage_reached) == ("out_of_memory", "run")
    assert "Tried to allocate" in evaluation.error_trace
    assert ungated_evaluator.stats()["retries"] == retries_before + 1


def test_a_baseline_out_of_memory_beside_other_walks_goes_again_alone(ungated_evaluator):
    # two TritonBench-revised baselines ran out of an H200's memory beside 7 other walks
    # and left their tasks untimed as the harness's error (RESULTS.md §40)
    retries_before = ungated_evaluator.stats()["retries"]
    hungry = dataclasses.replace(VECTOR_ADD, name="vector_add_hungry_baseline", baseline_source=add_source(
        pre_return="raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 72.00 MiB')"))
    evaluation = ungated_evaluator.evaluate(hungry, make_candidate("vector_add", add_source()))
    # the second walk, alone, meets it again: the task's, not the candidate's
    assert (evaluation.failure_kind, evaluation.stage_reached) == ("harness_error", "timed")
    assert "baseline failed its timing (out_of_memory)" in evaluation.error_trace
    assert ungated_evaluator.stats()["retries"] == retries_before + 1


def test_candidate_finds_no_secret_in_its_environment(ungated_evaluator, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", "sk-fake-do-not-leak")
    monkeypatch.setenv("MYSQL_PWD", "tok-fake-do-not-leak")
    monkeypatch.setenv("PLAIN_NAME", "plain-do-not-leak")
    ungated_evaluator.evaluate(VECTOR_ADD, make_candidate(  # workers respawn with these set
        "vector_add", add_source(pre_return="import os; os._exit(21)")))
    snoop = add_source(pre_return=(
        "import os\n    leaked = sorted(k for k in os.environ if k in ('FAKE_API_KEY', 'MYSQL_PWD', 'PLAIN_NAME'))\n"
        "    raise RuntimeError(f'visible={leaked} value={os.environ.get(\"FAKE_API_KEY\", \"absent\")}')"))
    for _ in range(2):  # both workers
        evaluation = ungated_evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", snoop))
        assert evaluation.failure_kind == "runtime_error"
        assert "visible=[] value=absent" in evaluation.error_trace
        assert "do-not-leak" not in evaluation.error_trace


def test_task_not_runnable_on_backend_is_unsupported(fitness_evaluator):
    gpu_only = dataclasses.replace(VECTOR_ADD, runnable_on=("cuda", "rocm"),
                                   skip_reason="needs tensor cores")
    evaluation = fitness_evaluator.evaluate(gpu_only, make_candidate("vector_add", add_source()))
    assert evaluation.failure_kind == "unsupported_on_backend"
    assert "needs tensor cores" in evaluation.error_trace


def test_task_without_input_generator_is_a_harness_error(fitness_evaluator):
    broken = dataclasses.replace(VECTOR_ADD, make_inputs=None)
    evaluation = fitness_evaluator.evaluate(broken, make_candidate("vector_add", add_source()))
    assert evaluation.failure_kind == "harness_error"
    assert "vector_add" in evaluation.error_trace


def test_device_that_stops_answering_is_reported_not_waited_on():
    from fitness import Evaluator, Settings

    start = time.monotonic()
    with Evaluator(Settings(device="interpreter", workers=1, timeouts={"ready_s": 0.01})) as evaluator:
        evaluation = evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", add_source()))
        stats = evaluator.stats()
    assert evaluation.failure_kind == "harness_error"
    assert "stopped answering" in evaluation.error_trace
    assert stats["device_ok"] is False and "failed to start 3 times" in stats["device_error"]
    assert time.monotonic() - start < 30


def test_an_honest_candidate_is_unaffected_by_a_hostile_one_before_it(ungated_evaluator):
    # The hostile candidate (gate off, so it runs) slows every Triton launch in its process
    # by 0.5 s before anything is timed. The baseline used to be timed in the candidate's
    # process and cached: the honest candidate after it then scored a flattering speedup.
    # Now the trusted checker times the baseline, and the tainted worker is replaced.
    from cheats.tasks import ROW_SOFTMAX

    task = dataclasses.replace(ROW_SOFTMAX, name="row_softmax_after_a_hostile_one")
    honest_source = ROW_SOFTMAX.baseline_source.replace("def row_softmax", "def row_softmax_after_a_hostile_one")
    task = dataclasses.replace(task, entry_point="row_softmax_after_a_hostile_one",
                               baseline_source=honest_source)
    hostile = honest_source + (
        "\nimport time\nfrom triton.runtime import jit as _jit\n_run = _jit.JITFunction.run\n\n\n"
        "def _slow_run(*args, **kwargs):\n    time.sleep(0.5)\n    return _run(*args, **kwargs)\n\n\n"
        "_jit.JITFunction.run = _slow_run\n")
    first = ungated_evaluator.evaluate(task, make_candidate(task.name, hostile))
    assert first.failure_kind == "cheat_patched_harness", first.error_trace
    honest = ungated_evaluator.evaluate(task, make_candidate(task.name, honest_source))
    assert honest.correct, honest.error_trace
    # A baseline timed beside the hostile code would take >= 0.5 s per launch, a flattering
    # speedup for the honest copy of that same baseline. Timed by the checker, each case is
    # far below that, and the copy scores about 1x (interpreter timings on two busy cores
    # spread by up to 2x, hence the wide band; the cheat's is 5x and more).
    assert all(ref < 250_000 for ref in honest.ref_latency_us), honest.ref_latency_us
    assert 0.25 < honest.speedup < 4.0, (honest.latency_us, honest.ref_latency_us)
