"""Every candidate in the cheat library (tests/cheats/candidates) is caught as its header says."""

import concurrent.futures
import warnings

import pytest

import cheats
import compromised
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
        for key in ("caught-as", "second-layer", "caught-as-cuda", "second-layer-cuda"):
            assert set(fields.get(key, "mismatch").split("|")) <= {*FAILURE_KINDS, "none"}, (
                f"{path.name}: bad {key} {fields}")
        assert fields.get("device") in (None, "cuda"), f"{path.name}: unknown device {fields}"


def test_gpu_only_cheats_are_listed_as_not_applicable_here():
    """The GPU-only mechanisms cannot run under the interpreter; they are named here, not
    silently left out (`experiments/perf/cheat_sweep.py --device cuda` scores them)."""
    names = [path.name for path in GPU_ONLY]
    assert {"cache_in_reused_workspace.py", "captured_graph_does_less.py",
            "senses_back_to_back_on_the_device.py", "spins_the_gpu_at_import.py"} <= set(names)
    warnings.warn(f"not applicable on the interpreter (device: cuda): {', '.join(names)}")


class Honest:
    """What an honest kernel reads: each task's baseline scored as a candidate, and each
    twin (`tests/cheats/twins`: a cheat's own kernel with no trick) by file name; `again`
    scores one of them anew (`compromised.slower_than_twin`)."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        names = [name for name, task in TASKS.items() if task.baseline_source]
        names += [path.name for path in sorted(cheats.TWINS_DIR.glob("*.py"))]
        self.scored = {name: self.again(name, "honest") for name in names}

    def again(self, name: str, copy: str = "again"):
        if name in TASKS:
            task, source = TASKS[name], TASKS[name].baseline_source
        else:
            path = cheats.TWINS_DIR / name
            task, source = TASKS[path.stem.split("_block")[0]], path.read_text()
        return self.evaluator.evaluate(task, make_candidate(task.name, f"{source}\n# {copy}\n"))


@pytest.fixture(scope="module")
def honest(fitness_evaluator):
    return Honest(fitness_evaluator)


HONEST_BOUND = 1.5
"""A cheat scored correct may read at most this many times an honest kernel's speed on the
interpreter (the geometric mean over the cases both timed, as the compromised-worker suite
weighs it), whose CPU-time latency scatters by tens of percent a case under a full suite's
load (one case of a correct cheat read 0.64 of its twin once: the twin is scored again
while a cheat reads past it, `compromised.slower_than_twin`); a trick that worked would
skip the work and read several times faster on every case (the GPU bound is measured by
experiments/perf/cheat_sweep.py)."""


def _judged_as_promised(path, evaluation, ungated: bool, honest: Honest) -> None:
    expected = cheats.expected_kinds(cheats.header(path), ungated, "interpreter")
    if evaluation.correct:
        assert "none" in expected, (f"{path.name}: expected {expected}, scored correct "
                                    f"(speedup {evaluation.speedup})")
        fields = cheats.header(path)
        name = fields.get("twin", fields["task"])
        slower = compromised.slower_than_twin(evaluation, honest.scored[name],
                                              lambda: honest.again(name), HONEST_BOUND)
        assert slower is not None and slower >= 1 / HONEST_BOUND, (
            f"{path.name}: scored correct and {1 / (slower or 1):.2f}x as fast as the honest "
            "baseline: its trick bought time")
        return
    assert evaluation.speedup is None
    assert evaluation.failure_kind in expected, (
        f"{path.name}: expected {expected}, got {evaluation.failure_kind} at "
        f"{evaluation.stage_reached}: {evaluation.error_trace[-800:]}")
    assert evaluation.error_trace.strip(), "a caught cheat must say why"


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.stem)
def test_cheat_is_caught(path, verdicts, honest):
    _judged_as_promised(path, verdicts[path.name], False, honest)


@pytest.mark.slow
@pytest.mark.parametrize("path", SECOND_LAYER, ids=lambda p: p.stem)
def test_cheat_is_caught_without_the_static_gate(path, ungated_verdicts, honest):
    _judged_as_promised(path, ungated_verdicts[path.name], True, honest)
