"""Campaign metrics on a synthetic results folder whose numbers are worked out by hand
(see synthetic_results.example_campaign for the rows)."""

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evo.analysis import metrics as analysis
from synthetic_results import evaluation, example_campaign, write_campaign


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return analysis.load(example_campaign(tmp_path_factory.mktemp("campaign") / "c"))


@pytest.fixture(scope="module")
def tasks(results):
    return analysis.task_table(results)


def test_task_rates_count_the_seed_rows(tasks):
    add = tasks.loc["add"]
    assert add["candidates"] == 6  # the seed (generation 0) is a candidate like any other
    assert add["call_rate"] == pytest.approx(4 / 6)
    assert add["correct_rate"] == pytest.approx(3 / 6)
    assert (add["runs"], add["runs_called"], add["runs_solved"]) == (3, 2, 2)
    assert add["best_speedup"] == 2.5 and add["roofline_fraction"] == 0.8


def test_configured_island_without_rows_counts_as_an_unsolved_run(tasks):
    softmax = tasks.loc["softmax"]
    assert (softmax["runs"], softmax["runs_called"], softmax["runs_solved"]) == (3, 2, 1)
    matmul = tasks.loc["matmul"]
    assert (matmul["runs_solved"], math.isnan(matmul["best_speedup"])) == (0, True)


def test_pass_at_k_per_task(tasks):
    curves = analysis.pass_curves(tasks, "runs_solved")
    assert curves["add"] == pytest.approx({1: 2 / 3, 2: 1.0, 3: 1.0})
    assert curves["softmax"] == pytest.approx({1: 1 / 3, 2: 2 / 3, 3: 1.0})
    assert curves["matmul"] == {1: 0.0, 2: 0.0, 3: 0.0}
    assert analysis.pass_curves(tasks, "runs_called")["softmax"] == pytest.approx({1: 2 / 3, 2: 1, 3: 1})


def test_suite_metrics_follow_geak_and_kernelbench(tasks):
    suite = analysis.suite_metrics(tasks)
    assert suite["tasks"] == 3
    assert suite["call_accuracy"] == pytest.approx(2 / 3)
    assert suite["exec_accuracy"] == pytest.approx(2 / 3)
    assert suite["speedup_mean"] == pytest.approx(1.5)  # (2.5 + 0.5) / 2, solved tasks only
    assert suite["speedup_geomean"] == pytest.approx(math.sqrt(1.25))
    assert suite["fast_p"] == pytest.approx({"0": 2 / 3, "1": 1 / 3, "1.5": 1 / 3, "2": 1 / 3})
    assert suite["pass_at_k"] == pytest.approx({"1": 1 / 3, "2": 5 / 9, "3": 2 / 3})
    assert suite["call_pass_at_k"] == pytest.approx({"1": 4 / 9, "2": 2 / 3, "3": 2 / 3})


def test_by_generation_is_cumulative_with_spend(results):
    table = analysis.by_generation(results)
    assert list(table.index) == [0, 1, 2]
    # add's correct seed solves its island 0 at generation 0
    assert list(table["exec_accuracy"]) == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert list(table["pass_at_1"]) == pytest.approx([1 / 9, 2 / 9, 1 / 3])
    assert table.loc[0, "speedup_geomean"] == pytest.approx(1.0)
    assert table.loc[1, "speedup_geomean"] == pytest.approx(math.sqrt(1.5 * 0.5))
    assert list(table["evaluations"]) == [2, 6, 8]  # add's reused row of gen 2 is no evaluation
    assert list(table["gpu_s"]) == pytest.approx([0.6, 1.8, 2.4])  # reused rows cost nothing
    assert list(table["tokens"]) == [100, 300, 700]
    assert list(table["usd"]) == pytest.approx([0.01, 0.03, 0.07])


def test_best_speedup_by_generation_carries_forward(results):
    best = analysis.best_speedup_by_generation(results)
    assert list(best["add"]) == [1.0, 1.5, 2.5]  # from its seed on
    assert list(best["softmax"].iloc[1:]) == [0.5, 0.5]
    assert best["matmul"].isna().all()


def test_by_runs_gives_parallel_scaling(results, tasks):
    runs = analysis.by_runs(results, tasks)
    assert list(runs.index) == [1, 2, 3]
    assert list(runs["pass_at_k"]) == pytest.approx([1 / 3, 5 / 9, 2 / 3])
    # add's runs [1.5, 2.5, 0], softmax's [0.5, 0, 0]; mean over the two solved tasks
    assert list(runs["expected_best_speedup"]) == pytest.approx([0.75, 1.25, 1.5])


def test_by_difficulty_groups_tasks(tasks):
    groups = analysis.by_difficulty(tasks)
    assert set(groups) == {"1", "2", "3"}
    assert groups["2"]["exec_accuracy"] == 1.0 and groups["3"]["exec_accuracy"] == 0.0


def test_notes_flag_interpreter_timing_and_seeds(results):
    notes = " ".join(analysis.timing_notes(results))
    assert "1 of 4 timed rows have timing_meaningful=False" in notes
    assert "interpreter" in notes
    assert "1 of 3 tasks start from a correct seed kernel" in notes


def test_a_named_task_without_rows_still_counts_as_unsolved(tmp_path):
    rows = [evaluation("add", 0, 1, call_ok=True, correct=True, speedup=1.2)]
    results = analysis.load(write_campaign(tmp_path / "c", rows, islands=1, tasks=("add", "ghost")))
    tasks = analysis.task_table(results)
    assert list(tasks.index) == ["add", "ghost"]
    assert tasks.loc["ghost", "candidates"] == 0 and tasks.loc["ghost", "runs"] == 1
    assert analysis.suite_metrics(tasks)["exec_accuracy"] == 0.5


def test_migrating_islands_are_flagged_as_not_independent(tmp_path):
    rows = [evaluation("add", 0, 1, call_ok=True, correct=True, speedup=1.2)]
    results = analysis.load(write_campaign(tmp_path / "c", rows, islands=2, migration_interval=3))
    assert results.independent_runs is False
    assert "not over independent runs" in " ".join(analysis.timing_notes(results))


def test_missing_folder_and_empty_campaign_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results folder"):
        analysis.load(tmp_path / "nope")
    with pytest.raises(ValueError, match="no campaign.json"):
        analysis.load(tmp_path)
    (tmp_path / "campaign.json").write_text("{}")
    with pytest.raises(ValueError, match="no evaluations yet"):
        analysis.load(tmp_path)


def test_missing_columns_and_corrupt_parts_are_named(tmp_path):
    folder = write_campaign(tmp_path / "c", [evaluation("add", 0, 0, call_ok=True)])
    (folder / "evaluations" / "part-00009.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="part-00009.parquet: not a readable Parquet part"):
        analysis.load(folder)
    (folder / "evaluations" / "part-00009.parquet").unlink()
    pq.write_table(pa.table({"task": ["add"], "island": [0], "generation": [1]}),
                   folder / "evaluations" / "part-00000.parquet")
    with pytest.raises(ValueError, match="missing columns .*call_ok"):
        analysis.load(folder)


def test_a_seed_shared_by_islands_is_one_evaluation_solves_each_run_and_floors_the_best(
        tmp_path):
    seed = dict(call_ok=True, correct=True, speedup=1.0, roofline=0.4, operator="seed")
    rows = [evaluation("add", 0, 0, **seed), evaluation("add", 1, 0, reused=True, **seed),
            evaluation("add", 0, 1, call_ok=True, correct=True, speedup=0.6),
            evaluation("add", 1, 1, call_ok=True, correct=True, speedup=0.58)]
    results = analysis.load(write_campaign(tmp_path / "c", rows, islands=2, tasks=("add",)))
    add = analysis.task_table(results).loc["add"]
    assert add["best_speedup"] == 1.0 and add["best_candidate_id"] == rows[0]["candidate_id"]
    assert (add["candidates"], add["runs"], add["runs_solved"]) == (4, 2, 2)
    table = analysis.by_generation(results)
    assert list(table["evaluations"]) == [1, 3]  # the seed's second row is reused
    assert list(table["gpu_s"]) == pytest.approx([0.3, 0.9])
    assert list(table["exec_accuracy"]) == [1.0, 1.0] and table.loc[0, "pass_at_1"] == 1.0
    assert list(analysis.best_speedup_by_generation(results)["add"]) == [1.0, 1.0]
    runs = analysis.by_runs(results, analysis.task_table(results))
    assert runs["expected_best_speedup"].tolist() == pytest.approx([1.0, 1.0])
