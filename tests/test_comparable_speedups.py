"""Speedups rank only when measured on every case: a screened clear loser (timed on its
representative case only) keeps its partial latencies but no speedup, and every reader
(report, best, fast_p, progress, summary, selection) ignores a speedup column that came
with a null latency, as rows written before the cascade nulled them still carry one."""

import dataclasses

import pytest

from evo.analysis import metrics as analysis
from evo.records import Evaluation, speedup_if_fully_timed
from evo.toolbox import fitness_values
from synthetic_results import evaluation, write_campaign


def _partially_timed(row: dict, speedup: float) -> dict:
    """The row of a candidate timed on 1 of 3 cases whose old speedup column is over that case."""
    return {**row, "case_names": ["a", "b", "c"], "latency_us": [1.0, None, None],
            "ref_latency_us": [speedup, 5.0, 5.0], "speedup": speedup, "worst_speedup": speedup}


def test_the_rule_needs_every_latency():
    assert speedup_if_fully_timed(True, 1.5, [1.0, 2.0]) == 1.5
    assert speedup_if_fully_timed(True, 1.5, [1.0, None]) is None
    assert speedup_if_fully_timed(True, 1.5, [1.0, float("nan")]) is None
    assert speedup_if_fully_timed(True, 1.5, []) is None
    assert speedup_if_fully_timed(False, 1.5, [1.0]) is None


def test_selection_ranks_a_screened_loser_below_every_fully_timed_kernel():
    timed = Evaluation("a", "timed", True, True, case_names=("x", "y"), latency_us=(2.0, 3.0),
                       speedup=0.9, worst_speedup=0.8, timing_meaningful=True)
    screened = dataclasses.replace(timed, candidate_id="b", latency_us=(1.0, None), speedup=3.0)
    assert fitness_values(timed) == (1.0, 0.9)
    assert fitness_values(screened) == (1.0, 0.0)
    assert screened.comparable_speedup is None and timed.comparable_speedup == 0.9


def test_report_best_ignores_a_speedup_over_fewer_cases(tmp_path):
    honest = {**evaluation("t", 0, 1, call_ok=True, correct=True, speedup=1.2),
              "case_names": ["a", "b", "c"], "latency_us": [1.0, 2.0, 3.0],
              "ref_latency_us": [1.2, 2.4, 3.6]}
    screened = _partially_timed(evaluation("t", 0, 2, call_ok=True, correct=True, speedup=1.0),
                                speedup=1.81)
    results = analysis.load(write_campaign(tmp_path / "c", [honest, screened], islands=1,
                                           tasks=("t",)))
    tasks = analysis.task_table(results)
    assert tasks.loc["t", "best_speedup"] == pytest.approx(1.2)
    assert analysis.best_speedup_by_generation(results)["t"].max() == pytest.approx(1.2)
    assert analysis.suite_metrics(tasks)["fast_p"]["1.5"] == 0.0
    assert results.evaluations["speedup"].notna().sum() == 1
