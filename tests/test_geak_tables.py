"""GEAK's tables (evo.analysis.geak_tables) from real campaigns on the TritonBench-revised
fixture suite under the interpreter: two direct-prompting campaigns (the recorded-generations
fixture and the same replies in another order, as two models) and one offline search on three
independent islands. Every number is checked against the Parquet rows read with pandas alone."""

import json
import math
import re
import pathlib

import pandas as pd
import pytest

from evo import campaign, config as config_lib
from evo.analysis import geak_tables
from evo.analysis.noise import INTERPRETER_CAVEAT
from synthetic_results import evaluation, write_campaign

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
GENERATIONS = FIXTURES / "recorded_generations" / "tritonbench_g.jsonl"
TASKS = ["scale_shift", "row_max"]  # difficulty 1 and 3; fnuz_cast runs on ROCm only
GENERATIONS_SEARCHED, ISLANDS = 2, 3
HEADER = "| exec acc | speedup (GEAK mean) | speedup geomean | timed | > ref |"


def _run(actors, folder, islands, generations, seeded, **operators):
    config = config_lib.from_dict({
        "campaign": {"name": folder.name, "tasks": TASKS, "suite": "tritonbench-revised",
                     "path": str(FIXTURES / "external" / "tritonbench"),
                     "seed_with_baseline": seeded},
        "search": {"generations": generations, "islands": islands, "population": 2,
                   "offspring": 2, "migration_interval": 0},
        "operators": {"mode": "offline", **operators},
        "fitness": {"device": "interpreter", "workers": 1}})
    campaign.run_campaign(config, folder, fitness_actors=actors)
    return folder


@pytest.fixture(scope="module")
def runs(interpreter_fitness, tmp_path_factory):
    """{"direct": {model: folder}, "search": folder}. Model "reordered" has the fixture's
    replies with each task's second sample first: row_max's first is then the reply without
    code, which island 0 gets (its island 1 gets the good one)."""
    root = tmp_path_factory.mktemp("geak")
    lines = GENERATIONS.read_text().splitlines()
    reordered = root / "reordered.jsonl"
    reordered.write_text("\n".join([lines[2], lines[3], lines[0], lines[1]]) + "\n")
    direct = {model: _run(interpreter_fitness, root / f"direct-{model}", 2, 0, False,
                          generations_from=str(path))
              for model, path in (("tritonbench_g", GENERATIONS), ("reordered", reordered))}
    search = _run(interpreter_fitness, root / "search", ISLANDS, GENERATIONS_SEARCHED, True)
    return {"direct": direct, "search": search}


def _rows(folder):
    return pd.read_parquet(folder / "evaluations")


def _row(frame, **where):
    selected = frame
    for column, value in where.items():
        selected = selected[selected[column] == value]
    (row,) = selected.to_dict("records")
    return row


def _expected(rows, tasks=TASKS):
    """Returns (call acc, exec acc, GEAK mean speedup, timed) of rows over tasks, by pandas."""
    called = rows.groupby("task").call_ok.any().reindex(tasks, fill_value=False)
    solved = rows.groupby("task").correct.any().reindex(tasks, fill_value=False)
    best = rows[rows.correct & rows.speedup.notna()].groupby("task").speedup.max()
    return called.mean(), solved.mean(), (best.mean() if len(best) else None), len(best)


def _matches(row, expected):
    got = (row["call_accuracy"], row["exec_accuracy"], row["speedup_mean"], row["timed"])
    return all((a is None and (b is None or math.isnan(b))) or a == pytest.approx(b)
               for a, b in zip(expected, got))


@pytest.mark.slow  # campaign-level: `make test-fast` leaves it out
def test_direct_prompting_scores_island_0_s_first_reply_per_model_and_level(runs):
    table = geak_tables.direct_prompting(runs["direct"])

    assert list(table.model.unique()) == ["tritonbench_g", "reordered"]
    for model, folder in runs["direct"].items():
        rows = _rows(folder)
        assert set(rows.operator) == {"generator"}
        first = rows[rows.island == 0].sort_values("generation").groupby("task").head(1)
        assert _matches(_row(table, model=model, level="all"), _expected(first))
        for level, task in (("1", "scale_shift"), ("3", "row_max")):
            row = _row(table, model=model, level=level)
            assert row["tasks"] == 1 and _matches(row, _expected(first[first.task == task], [task]))
    # island 1 solved row_max for "reordered"; its island 0 reply has no code: not counted
    reordered = _rows(runs["direct"]["reordered"])
    assert reordered[(reordered.task == "row_max") & (reordered.island == 1)].correct.any()
    assert _row(table, model="reordered", level="3")["call_accuracy"] == 0.0
    assert _row(table, model="reordered", level="all")["exec_accuracy"] == 0.5
    assert _row(table, model="tritonbench_g", level="all")["exec_accuracy"] == 1.0
    assert not table.timing_meaningful.any()
    meta = json.loads((runs["direct"]["reordered"] / "campaign.json").read_text())
    assert meta["difficulty"] == {"scale_shift": 1, "row_max": 3}


@pytest.mark.slow
def test_direct_prompting_leaves_seeds_out(runs):
    table = geak_tables.direct_prompting({"seeds only": runs["search"]})
    assert _row(table, level="all")["tasks"] == 2
    assert (table.call_accuracy == 0).all() and table.speedup_mean.isna().all()


@pytest.mark.slow
def test_sequential_reads_island_0_up_to_each_generation_and_never_falls(runs):
    table = geak_tables.sequential(runs["search"])
    rows = _rows(runs["search"])
    island = rows[rows.island == 0]

    assert list(table.level.unique()) == ["1", "3", "all"]
    for level, group in table.groupby("level"):
        assert list(group.generation) == list(range(GENERATIONS_SEARCHED + 1))
        assert group.exec_accuracy.is_monotonic_increasing
        assert group.speedup_mean.dropna().is_monotonic_increasing
    for g in range(GENERATIONS_SEARCHED + 1):
        assert _matches(_row(table, level="all", generation=g),
                        _expected(island[island.generation <= g]))
    seed = island[(island.operator == "seed") & (island.task == "scale_shift")].speedup.item()
    assert _row(table, level="1", generation=0)["speedup_mean"] == pytest.approx(seed)


@pytest.mark.slow
def test_parallel_takes_the_best_of_the_first_k_islands(runs):
    table = geak_tables.parallel(runs["search"])
    sequential = geak_tables.sequential(runs["search"])
    rows = _rows(runs["search"])

    for level, group in table.groupby("level"):
        assert list(group.k) == list(range(1, ISLANDS + 1))
        assert group.speedup_mean.dropna().is_monotonic_increasing
        last = sequential[(sequential.level == level)
                          & (sequential.generation == GENERATIONS_SEARCHED)]
        assert group.iloc[0].drop("k").equals(last.iloc[0].drop("generation"))  # k=1: island 0
    for k in range(1, ISLANDS + 1):
        assert _matches(_row(table, level="all", k=k), _expected(rows[rows.island < k]))


@pytest.mark.slow
def test_cli_writes_the_markdown_it_prints_with_json_and_figures(runs, tmp_path, capsys):
    direct = [f"--direct={model}={folder}" for model, folder in runs["direct"].items()]
    geak_tables.main(direct + ["--search", str(runs["search"]), "--out", str(tmp_path)])

    text = (tmp_path / "geak_tables.md").read_text()
    assert capsys.readouterr().out == text
    assert f"| model | level | tasks | call acc {HEADER}" in text
    assert f"| level | generation | tasks | call acc {HEADER}" in text
    assert f"| level | k | tasks | call acc {HEADER}" in text
    for title in ("## Table 2: direct prompting", "## Table 5: sequential scaling, search",
                  "## Table 6: parallel scaling, search"):
        assert title in text
    assert text.count(f"n/a (interpreter): {INTERPRETER_CAVEAT}") == 3
    cells = [cell for line in text.splitlines() if line.startswith("| ")
             for cell in line.split(" | ")]
    assert "n/a (interpreter)" in cells and not [c for c in cells if re.search(r"\dx$", c)]
    saved = json.loads((tmp_path / "geak_tables.json").read_text())
    expected = geak_tables.parallel(runs["search"])
    saved_means = [r["speedup_mean"] for r in saved["search"]["search"]["parallel"]]
    assert pd.Series(saved_means, dtype=float).equals(expected.speedup_mean.astype(float))
    for figure in ("speedup_vs_generation.png", "speedup_vs_k.png", "exec_acc_by_difficulty.png"):
        assert (tmp_path / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_meaningful_timing_is_unstarred_and_a_task_without_rows_counts_as_failed(tmp_path):
    rows = [evaluation("add", 0, 0, call_ok=True, correct=True, speedup=2.0, operator="generator"),
            evaluation("mul", 0, 0, call_ok=True, correct=True, speedup=0.5, operator="generator",
                       difficulty=2)]
    folder = write_campaign(tmp_path / "gpu", rows, islands=1, tasks=("add", "mul", "silent"))
    table = geak_tables.direct_prompting({"m": folder})

    whole = _row(table, level="all")
    assert (whole["tasks"], whole["exec_accuracy"]) == (3, 2 / 3)
    assert whole["faster_than_reference"] == 1 / 3
    assert whole["speedup_mean"] == 1.25 and whole["speedup_geomean"] == pytest.approx(1.0)
    text = "\n".join(geak_tables.table_text(table, "model"))
    assert "| m | all | 3 | 66.7% | 66.7% | 1.25x | 1.00x | 2 | 33.3% |" in text
    assert INTERPRETER_CAVEAT not in text


def test_a_task_without_rows_counts_as_failed_at_the_level_campaign_json_records(tmp_path):
    # "silent": its one reply had no usable code, so no evaluation row, only its level recorded
    rows = [evaluation("add", 0, 0, call_ok=True, correct=True, speedup=2.0, operator="generator"),
            evaluation("mul", 0, 0, call_ok=True, correct=True, speedup=0.5, operator="generator",
                       difficulty=2)]
    levels = {"add": 1, "mul": 2, "silent": 2}
    recorded = write_campaign(tmp_path / "recorded", rows, islands=1, tasks=tuple(levels),
                              difficulty=levels)
    table = geak_tables.direct_prompting({"m": recorded})

    level_2 = _row(table, level="2")
    assert (level_2["tasks"], level_2["exec_accuracy"], level_2["call_accuracy"]) == (2, 0.5, 0.5)
    assert table[table.level != "all"].tasks.sum() == _row(table, level="all")["tasks"] == 3
    # before levels were recorded, such a task counted in "all" alone
    older = write_campaign(tmp_path / "older", rows, islands=1, tasks=tuple(levels))
    assert _row(geak_tables.direct_prompting({"m": older}), level="2")["tasks"] == 1


def test_cli_refuses_a_direct_folder_without_a_label(tmp_path, capsys):
    with pytest.raises(SystemExit):
        geak_tables.main(["--direct", str(tmp_path), "--out", str(tmp_path)])
    assert "--direct takes LABEL=DIR" in capsys.readouterr().err
