"""Honest kernels are not flagged: built-in baselines of every shape of task score correct."""

import concurrent.futures

import pytest

from benchmarks.registry import builtin
from cheats.tasks import ROW_SOFTMAX
from evo.records import make_candidate

# elementwise, a reduction with int output, integer-indexed gather, a fused loss, our softmax
NAMES = ("bias_gelu", "row_argmax", "embedding", "cross_entropy")
TASKS = [task for task in builtin().tasks() if task.name in NAMES] + [ROW_SOFTMAX]


@pytest.fixture(scope="module")
def verdicts(fitness_evaluator):
    def evaluate(task):
        return fitness_evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((t.name for t in TASKS), pool.map(evaluate, TASKS)))


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_baseline_scores_correct(task, verdicts):
    evaluation = verdicts[task.name]
    assert evaluation.correct, f"{evaluation.failure_kind}: {evaluation.error_trace[-800:]}"
    assert evaluation.stage_reached == "timed"
    assert len(evaluation.latency_us) == len(task.interpreter_cases)


@pytest.mark.slow
def test_concurrent_walks_of_one_task_warm_and_time_its_baseline_once():
    """Three walks of one task at once: one job loads the baseline in a worker of its own
    and times it, started by the first walk, and every walk waits for its numbers instead
    of timing the baseline itself."""
    from fitness import Evaluator, Settings
    from fitness_limits import FITNESS_TEST_LIMITS

    task = builtin().get("vector_add")
    with Evaluator(Settings(device="interpreter", workers=3,
                            timeouts=FITNESS_TEST_LIMITS)) as evaluator:
        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            evaluations = list(pool.map(lambda i: evaluator.evaluate(task, make_candidate(
                task.name, f"{task.baseline_source}\n_COPY = {i}\n")), range(3)))
        stats = evaluator.stats()
    requests, spent_s = stats["requests"], stats["request_s"]

    assert all(e.correct for e in evaluations), [e.error_trace[-500:] for e in evaluations]
    # four loads: the baseline's, once, and the three candidates'
    assert requests["candidate.load"] == 1 + len(evaluations)
    cases = len(task.interpreter_cases)  # each timed case opens one batch of the judge's
    assert requests["checker.timed_open"] == cases * (1 + len(evaluations))
    # the baseline's cases in one hold of the device (one drain of every walk's work), each
    # candidate's case in its own
    assert cases >= 2
    assert stats["timing_holds"] == 1 + cases * len(evaluations)
    # every prepare says what it spent inside the checker: no more than its round trip
    assert requests["checker.prepare.all"] == requests["checker.prepare"] > 0
    assert 0 < spent_s["checker.prepare.all"] <= spent_s["checker.prepare"]
    assert (spent_s["checker.prepare.make"] + spent_s["checker.prepare.reference"]
            <= spent_s["checker.prepare.all"])
    assert len({e.ref_latency_us for e in evaluations}) == 1  # all judged against one timing


@pytest.mark.slow
def test_a_checker_hands_memory_back_only_while_no_timing_holds_the_device(tmp_path):
    """A checker's reset frees its device memory (an unmap, which slowed a timing run beside
    it on an H200), so the walk sends it under the shared hold: while a timing holds the
    device alone, the walk has its worker and checker but has not reset the checker yet."""
    import time

    from fitness.device import detect
    from fitness.processes.device_lock import DeviceLock
    from fitness.judge.cascade import BASELINE_JOBS, Cascade
    from fitness.settings import Limits
    from fitness.processes.pool import WorkerPool
    from fitness_limits import FITNESS_TEST_LIMITS

    device, gate = detect("interpreter"), DeviceLock(exclusive_timing=True)
    candidates = WorkerPool(device, 1, "candidate", str(tmp_path))
    baselines = WorkerPool(device, 1, "candidate", str(tmp_path))
    checkers = WorkerPool(device, 1 + BASELINE_JOBS, "checker", str(tmp_path))
    cascade = Cascade(device, candidates, checkers, gate, Limits.from_mapping(FITNESS_TEST_LIMITS),
                      baselines=baselines)
    task = builtin().get("vector_add")
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as threads:
            with gate.exclusive():  # a timing run holds the device alone
                walked = threads.submit(cascade.evaluate, task,
                                        make_candidate(task.name, task.baseline_source))
                deadline = time.monotonic() + 60
                while "checker.lease" not in cascade.meter.requests and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(1.0)  # ample for a reset sent without a hold
                during_timing = dict(cascade.meter.requests)
            evaluation = walked.result(timeout=120)
    finally:
        cascade.close()
        candidates.close()
        baselines.close()
        checkers.close()

    assert "checker.lease" in during_timing and "checker.reset" not in during_timing, during_timing
    assert evaluation.correct, evaluation.error_trace
    assert cascade.meter.requests["checker.reset"] >= 1
