"""Every candidate in the cheat library (tests/cheats/candidates) is caught as its header says."""

import concurrent.futures

import pytest

import cheats
from benchmarks.registry import builtin
from cheats.tasks import ROW_SOFTMAX
from evo.records import FAILURE_KINDS, make_candidate

TASKS = {"vector_add": builtin().get("vector_add"), "row_softmax": ROW_SOFTMAX}
LIBRARY = cheats.library()


@pytest.fixture(scope="module")
def verdicts(fitness_evaluator):
    """Evaluates the whole library at once (two workers in parallel); file name -> Evaluation."""

    def evaluate(path):
        fields = cheats.header(path)
        task = TASKS[fields["task"]]
        return fitness_evaluator.evaluate(task, make_candidate(task.name, path.read_text()))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((p.name for p in LIBRARY), pool.map(evaluate, LIBRARY)))


def test_library_has_at_least_twelve_kinds_of_cheat():
    assert len(LIBRARY) >= 12
    for path in LIBRARY:
        fields = cheats.header(path)
        assert fields.get("task") in TASKS, f"{path.name}: unknown task header {fields}"
        assert fields.get("caught-as") in FAILURE_KINDS, f"{path.name}: bad caught-as {fields}"


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.stem)
def test_cheat_is_caught(path, verdicts):
    evaluation = verdicts[path.name]
    expected = cheats.header(path)["caught-as"]
    assert not evaluation.correct
    assert evaluation.speedup is None
    assert evaluation.failure_kind == expected, (
        f"{path.name}: expected {expected}, got {evaluation.failure_kind} at "
        f"{evaluation.stage_reached}: {evaluation.error_trace[-800:]}")
    assert evaluation.error_trace.strip(), "a caught cheat must say why"
