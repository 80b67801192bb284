"""The compromised-worker suite: every verdict holds against a candidate that owns its worker.

Each file of tests/compromised is the honest kernel plus an attack on one part of the judge,
run with the static gate off (the gate is a lint, not a boundary) and written to keep
attacking whatever the harness's internal names become. The judge's answer must be no better
than the candidate's real one: a cheat is either not correct or, when correct, no faster
than its honest twin (the same kernel, scored in the same session) beyond timing noise. A
cheat whose trick returns unwritten outputs can only be correct with its trick undone, so
this one rule covers both its outputs and its speed; a cheat that always returns unfinished
outputs (`expect: wrong`) must not be correct at all. Classes 10 and 11 harm others: the next
candidate in the same process, and a baseline timed beside them; each has its own Evaluator.
"""

import concurrent.futures
import math

import pytest

import compromised
from benchmarks.registry import builtin
from fitness import Evaluator, Settings
from fitness_limits import FITNESS_TEST_LIMITS

SPEED_BOUND = 1.5
"""How much faster than its honest twin (same session) a correct cheat may be scored under
the interpreter, whose wall-clock timings on two cores scatter by tens of percent. The
design's bound, 5% for cases of 20 us or more, is measured on a GPU by
`experiments/perf/compromised_sweep.py --device cuda`."""

HARMS_OTHERS = {10, 11}
CHEATS = compromised.cheats()
SELF_CHEATS = [path for path in CHEATS if compromised.class_number(path) not in HARMS_OTHERS]
TASKS = builtin()
SLOW_LIMITS = {"import_s": 60.0, "compile_s": 60.0, "check_s": 60.0, "bench_s": 60.0}


def _evaluator(workers: int = 2, limits=FITNESS_TEST_LIMITS) -> Evaluator:
    return Evaluator(Settings(device="interpreter", workers=workers, timeouts=limits,
                              static_gate=False))


def _why(evaluation) -> str:
    return (f"correct={evaluation.correct} kind={evaluation.failure_kind} speedup="
            f"{evaluation.speedup} latency_us={evaluation.latency_us} ref_latency_us="
            f"{evaluation.ref_latency_us}\n{evaluation.error_trace[-800:]}")


@pytest.fixture(scope="module")
def scored():
    """(twin name -> Evaluation, cheat name -> Evaluation, the Evaluator): the twins first and
    alone, then the cheats two at a time, on an Evaluator of this module's own (a worker the
    current harness reuses must not carry a cheat's patches into other modules' tests), kept
    open for a twin scored again (`compromised.slower_than_twin`)."""
    with _evaluator() as evaluator:
        twins = {name: compromised.scored(evaluator, compromised.DIR / name)
                 for name in sorted({compromised.header(p)["twin"] for p in SELF_CHEATS})}
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            cheats = dict(zip((p.name for p in SELF_CHEATS),
                              pool.map(lambda p: compromised.scored(evaluator, p), SELF_CHEATS)))
        yield twins, cheats, evaluator


def test_every_class_has_a_cheat_each_with_a_twin():
    classes = sorted({compromised.class_number(path) for path in CHEATS})
    assert classes == list(range(1, 13)), classes  # the eleven, and one launch for every run
    for path in CHEATS:
        fields = compromised.header(path)
        assert fields.get("task") in TASKS, f"{path.name}: unknown task {fields}"
        assert compromised.twin(path).is_file(), f"{path.name}: no twin {fields.get('twin')}"
        assert fields.get("expect") in ("no-faster", "wrong", "next-correct",
                                        "baseline-not-inflated"), f"{path.name}: {fields}"


@pytest.mark.slow
def test_honest_twins_are_correct(scored):
    twins, _, _ = scored
    for name, evaluation in twins.items():
        assert evaluation.correct and evaluation.speedup, f"{name}: {_why(evaluation)}"


@pytest.mark.slow
@pytest.mark.parametrize("path", SELF_CHEATS, ids=lambda p: p.stem)
def test_cheat_is_judged_no_better_than_it_is(path, scored):
    twins, cheats, evaluator = scored
    twin_name = compromised.header(path)["twin"]
    evaluation, twin = cheats[path.name], twins[twin_name]
    if compromised.header(path)["expect"] == "wrong":
        assert not evaluation.correct, f"{path.name} returned unfinished outputs: {_why(evaluation)}"
    if not evaluation.correct:
        return
    assert twin.correct, f"the twin is not scored: {_why(twin)}"
    slower = compromised.slower_than_twin(
        evaluation, twin, lambda: compromised.scored(evaluator, compromised.DIR / twin_name,
                                                     f"again for {path.name}"), SPEED_BOUND,
        cheat_again=lambda: compromised.scored(evaluator, path, "again"))
    assert slower is not None and slower >= 1 / SPEED_BOUND, (
        f"{path.name} ran {1 / slower:.2f}x as fast as its honest twin on the cases both "
        f"were timed on: {_why(evaluation)} / twin {_why(twin)}")


def _path(class_number: int):
    return next(p for p in CHEATS if compromised.class_number(p) == class_number)


@pytest.fixture(scope="module")
def after_a_saboteur():
    """`compromised.next_slower_than_alone` for the class-10 cheat on one worker: the next
    candidate runs wherever the saboteur ran, unless the judge gives each its own."""
    with _evaluator(workers=1, limits=SLOW_LIMITS) as evaluator:
        return compromised.next_slower_than_alone(evaluator, TASKS.get("vector_add"), _path(10),
                                                  SPEED_BOUND)


@pytest.mark.slow
def test_next_candidate_is_judged_as_if_alone(after_a_saboteur):
    rounds, slower = after_a_saboteur
    for alone, _, after in rounds:
        assert alone.correct, _why(alone)
        assert after.correct and after.speedup, (
            f"an honest candidate scored after the saboteur: {_why(after)}")
    assert slower is not None and slower <= SPEED_BOUND, (
        f"an honest candidate read {slower}x slower after the saboteur than alone, over "
        f"{len(rounds)} rounds: {_why(rounds[-1][2])}")


@pytest.fixture(scope="module")
def beside_a_burner():
    """`compromised.scored_beside` on a warm Evaluator of its own, and the Evaluator (kept
    open for the twin scored again)."""
    with _evaluator(limits=SLOW_LIMITS) as evaluator:
        compromised.scored(evaluator, compromised.twin(_path(11)), "warm-up")  # workers started
        yield *compromised.scored_beside(evaluator, TASKS.get("vector_add"), _path(11)), evaluator


@pytest.mark.slow
def test_baseline_timed_beside_a_burner_is_not_inflated(beside_a_burner):
    """A baseline timed while the class-11 cheat burns beside it is no slower, beyond timing
    noise, than one timed on a quiet machine; the burner's own verdict is no better than its
    twin's."""
    quiet, beside, burner, seen, evaluator = beside_a_burner
    assert seen, "the burner's import was never seen under way: the test proved nothing"
    assert quiet.correct and beside.correct, f"{_why(quiet)}\n{_why(beside)}"
    ratios = [b / a for b, a in zip(beside.ref_latency_us, quiet.ref_latency_us)]
    inflation = math.exp(sum(map(math.log, ratios)) / len(ratios))
    assert inflation <= SPEED_BOUND, (
        f"the baseline timed beside the burner was {inflation:.2f}x slower (per case "
        f"{[round(r, 2) for r in ratios]}): quiet {quiet.ref_latency_us}, beside "
        f"{beside.ref_latency_us}")
    if burner.correct:
        twin = compromised.twin(_path(11))
        slower = compromised.slower_than_twin(
            burner, quiet, lambda: compromised.scored(evaluator, twin, "again for the burner"),
            SPEED_BOUND)
        assert slower is not None and slower >= 1 / SPEED_BOUND, (
            f"the burner's own kernel ran {1 / slower:.2f}x as fast as its twin: {_why(burner)}")
