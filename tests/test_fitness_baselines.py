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
