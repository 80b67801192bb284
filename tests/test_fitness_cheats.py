"""Every candidate in the cheat library (tests/cheats/candidates) is caught as its header says."""

import concurrent.futures
import warnings

import pytest

import cheats
from benchmarks.registry import builtin
from cheats.tasks import ROW_SOFTMAX
from evo.records import FAILURE_KINDS, make_candidate

TASKS = {"vector_add": builtin().get("vector_add"), "softmax": builtin().get("softmax"),
         "transpose": builtin().get("transpose"), "row_softmax": ROW_SOFTMAX}
EVERY_CHEAT = cheats.library()
LIBRARY = [p for p in EVERY_CHEAT if cheats.applies_to(p, "interpreter")]
GPU_ONLY = [p for p in EVERY_CHEAT if not cheats.applies_to(p, "interpreter")]


def _evaluate_all(evaluator, paths) -> dict:
    """Evaluates the given cheats (two at a time); file name -> Evaluation."""

    def evaluate(path):
        task = TASKS[cheats.header(path)["task"]]
        return evaluator.evaluate(task, make_candidate(task.name, path.read_text()))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((p.name for p in paths), pool.map(evaluate, paths)))


@pytest.fixture(scope="module")
def verdicts(fitness_evaluator):
    return _evaluate_all(fitness_evaluator, LIBRARY)


SECOND_LAYER = [p for p in LIBRARY if "second-layer" in cheats.header(p)]


@pytest.fixture(scope="module")
def ungated_verdicts(ungated_evaluator):
    """The cheats the static gate stops, scored with the gate off: the later layers alone."""
    return _evaluate_all(ungated_evaluator, SECOND_LAYER)


def test_library_has_at_least_twelve_kinds_of_cheat():
    assert len(LIBRARY) >= 12
    for path in EVERY_CHEAT:
        fields = cheats.header(path)
        assert fields.get("task") in TASKS, f"{path.name}: unknown task header {fields}"
        assert fields.get("caught-as") in FAILURE_KINDS or (
            fields.get("caught-as") == "none" and fields.get("harms")), (
            f"{path.name}: bad caught-as {fields}")
        assert fields.get("second-layer", "mismatch") in FAILURE_KINDS, f"{path.name}: {fields}"
        assert fields.get("device") in (None, "cuda"), f"{path.name}: unknown device {fields}"


def test_gpu_only_cheats_are_listed_as_not_applicable_here():
    """The GPU-only mechanisms cannot run under the interpreter; they are named here, not
    silently left out (`experiments/perf/cheat_sweep.py --device cuda` scores them)."""
    names = [path.name for path in GPU_ONLY]
    assert {"cache_in_reused_workspace.py", "captured_graph_does_less.py",
            "senses_back_to_back_on_the_device.py", "spins_the_gpu_at_import.py"} <= set(names)
    warnings.warn(f"not applicable on the interpreter (device: cuda): {', '.join(names)}")


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


@pytest.mark.slow
@pytest.mark.parametrize("path", SECOND_LAYER, ids=lambda p: p.stem)
def test_cheat_is_caught_without_the_static_gate(path, ungated_verdicts):
    evaluation = ungated_verdicts[path.name]
    expected = cheats.header(path)["second-layer"]
    assert not evaluation.correct
    assert evaluation.failure_kind == expected, (
        f"{path.name}: expected {expected} with the gate off, got {evaluation.failure_kind} "
        f"at {evaluation.stage_reached}: {evaluation.error_trace[-800:]}")
