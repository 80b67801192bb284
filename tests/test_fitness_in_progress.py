"""What an evaluation under way is doing (`Evaluator.in_progress`), and a compile that runs
out of time: what a campaign names when one of its islands has waited long."""

import concurrent.futures
import time

import pytest

from benchmarks.registry import builtin
from evo.records import STAGES, make_candidate
from fitness import Evaluator, Settings
from fitness_limits import FITNESS_TEST_LIMITS

VECTOR_ADD = builtin().get("vector_add")


def test_in_progress_follows_a_walk_through_its_stages_and_empties_after(fitness_evaluator):
    candidate = make_candidate("vector_add", f"{VECTOR_ADD.baseline_source}\n_WATCHED = 1\n")
    seen = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(fitness_evaluator.evaluate, VECTOR_ADD, candidate)
        while not future.done():
            seen += [s for s in fitness_evaluator.in_progress() if s["candidate_id"] == candidate.id]
            time.sleep(0.01)
        evaluation = future.result(timeout=120)

    assert evaluation.correct, evaluation.error_trace
    assert fitness_evaluator.in_progress() == []
    assert seen, "the evaluation was never seen under way"
    assert all(s["task"] == "vector_add" and s["for_s"] >= 0 for s in seen)
    stages = [STAGES.index(s["stage"]) for s in seen]
    assert stages == sorted(stages)  # a walk only moves forward
    requests = [s for s in seen if s["request"] is not None]
    assert {s["request"].split(".")[0] for s in requests} <= {"candidate", "checker"}
    assert {"candidate.load", "candidate.call"} & {s["request"] for s in requests}
    limits = {value for value in FITNESS_TEST_LIMITS.values()}
    assert all(s["limit_s"] in limits and 0 <= s["request_s"] <= s["for_s"] for s in requests)


@pytest.mark.slow
def test_a_compile_past_its_limit_is_a_compile_timeout_with_its_seconds_kept():
    # The launcher sleeps where a slow Triton compile would spend its time (on a GPU: ptxas
    # on a kernel whose accumulator spills, minutes); the stall watch is set far above the
    # compile limit, so the limit is what ends it.
    source = VECTOR_ADD.baseline_source.replace(
        "def vector_add(", "import time\n\n\ndef _slow_compile():\n    time.sleep(30)\n\n\n"
        "def vector_add(", 1).replace("    out = ", "    _slow_compile()\n    out = ", 1)
    assert "_slow_compile()\n    out = " in source
    limits = {**FITNESS_TEST_LIMITS, "compile_s": 2.0, "stall_s": 60.0}
    with Evaluator(Settings(device="interpreter", workers=1, timeouts=limits,
                            static_gate=False)) as evaluator:
        evaluation = evaluator.evaluate(VECTOR_ADD, make_candidate("vector_add", source))

    assert (evaluation.failure_kind, evaluation.stage_reached) == ("timeout", "compile")
    assert "ran past the 2 s compile limit" in evaluation.error_trace
    assert evaluation.compile_s >= 2.0  # the time it cost is in the row, not 0
