"""Every file of the honest corpus (tests/honest/<task>/<name>.py) is accepted and correct.

The corpus is Triton written the way LLMs and tutorial authors write it (`.contiguous()`
wrappers, `@torch.no_grad()`, autograd.Function and module wrappers, autotune, heuristics,
`__main__` self-tests, unused test functions, logging...). A verdict the gate or any later
layer gets wrong on one of them is a false rejection: the search could never breed it.
"""

import collections
import concurrent.futures
import pathlib

import pytest

from benchmarks.registry import builtin
from evo.records import make_candidate

HONEST_DIR = pathlib.Path(__file__).parent / "honest"
CORPUS = sorted(HONEST_DIR.glob("*/*.py"))
TASKS = builtin()


def _label(path: pathlib.Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.fixture(scope="module")
def verdicts(fitness_evaluator) -> dict:
    """Every corpus file through the real, gated evaluator, two at a time; label -> Evaluation."""

    def evaluate(path):
        task = TASKS.get(path.parent.name)
        return fitness_evaluator.evaluate(task, make_candidate(task.name, path.read_text()))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(map(_label, CORPUS), pool.map(evaluate, CORPUS)))


def test_corpus_has_at_least_80_files_over_at_least_10_builtin_tasks():
    per_task = collections.Counter(path.parent.name for path in CORPUS)
    unknown = sorted(name for name in per_task if name not in TASKS)
    assert not unknown, f"tests/honest has folders that are no built-in task: {unknown}"
    assert len(CORPUS) >= 80, f"only {len(CORPUS)} honest files: {dict(per_task)}"
    assert len(per_task) >= 10, f"only {len(per_task)} tasks covered: {dict(per_task)}"


@pytest.mark.slow
@pytest.mark.parametrize("path", CORPUS, ids=_label)
def test_honest_file_is_accepted_and_correct(path, verdicts):
    evaluation = verdicts[_label(path)]
    assert evaluation.correct and evaluation.failure_kind is None, (
        f"tests/honest/{_label(path)}.py was refused: {evaluation.failure_kind} at "
        f"{evaluation.stage_reached}:\n{evaluation.error_trace[-1500:]}")
