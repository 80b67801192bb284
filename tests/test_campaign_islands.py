"""Islands: k islands with migration_interval = 0 are k independent runs (STYLE §7), each
starting from the same seed, scored once and recorded on each island as generation 0."""

import contextlib
import io

import pandas as pd
import pytest

from evo import campaign, checkpoint, config as config_lib
from evo.analysis import metrics
from evo.progress import candidates_text
from evo.records import candidate_id
from benchmarks.builtin import common

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out


@pytest.fixture(scope="module")
def run(interpreter_fitness, tmp_path_factory):
    """One offline campaign of 3 independent islands; returns (folder, summary, printed)."""
    config = config_lib.from_dict({
        "campaign": {"name": "islands", "tasks": ["vector_add"], "seed": 5},
        "search": {"generations": 2, "population": 3, "offspring": 3, "islands": 3,
                   "migration_interval": 0},
        "fitness": {"device": "interpreter", "workers": 2}})
    out, printed = tmp_path_factory.mktemp("islands") / "run", io.StringIO()
    with contextlib.redirect_stdout(printed):  # the progress lines, not a terminal
        summary = campaign.run_campaign(config, out, fitness_actors=interpreter_fitness)
    return out, summary, printed.getvalue()


def test_independent_islands_keep_their_own_population_and_generation(run):
    out, summary, _ = run
    assert summary.generations_done == 2

    rows = pd.read_parquet(out / "evaluations")
    assert sorted(rows.island.unique()) == [0, 1, 2]
    baseline = candidate_id(common.baseline_source("vector_add"))
    for island, own in rows.groupby("island"):
        assert own.groupby("generation").size().to_dict() == {0: 1, 1: 3, 2: 3}
        # No migration: every parent was bred on this island, or is the seed.
        bred_here = set(own.candidate_id) | {baseline}
        assert all(set(parents) <= bred_here for parents in own.parent_ids), island

    state = checkpoint.load(out)
    islands = {key: value for key, value in state.islands.items()}
    assert sorted(islands) == [("vector_add", 0), ("vector_add", 1), ("vector_add", 2)]
    for (task, island), saved in islands.items():
        assert saved.generation_done == saved.population["generation"] == 2
        assert len(saved.population["logbook"]) == 3  # generation 0 (seeds), 1 and 2
        assert all(ind.candidate.island == island for ind in saved.population["population"])
    offspring = rows[rows.generation > 0]
    offspring_ids = [frozenset(offspring[offspring.island == i].candidate_id) for i in range(3)]
    assert len(set(offspring_ids)) == 3  # each island searched its own way


def test_the_seed_is_scored_once_and_written_as_generation_0_of_each_island(run):
    out, summary, _ = run
    parts = sorted(path.name for path in (out / "evaluations").glob("part-00000-*"))
    assert parts == [f"part-00000-vector_add-i{island:03d}.parquet" for island in range(3)]
    rows = pd.read_parquet(out / "evaluations")
    seeds = rows[rows.generation == 0].sort_values("island")
    assert list(seeds.operator) == ["seed"] * 3 and seeds.parent_ids.map(len).eq(0).all()
    assert set(seeds.candidate_id) == {candidate_id(common.baseline_source("vector_add"))}
    assert list(seeds.reused) == [False, True, True]  # fresh on the ring's first island only
    assert seeds.compile_s.nunique() == 1  # one scoring, its timing on every row
    # Rows are the candidates the engine handled; fresh rows are its evaluations.
    assert len(rows) == summary.candidates == checkpoint.load(out).candidates == 3 * 7
    assert summary.tasks["vector_add"].candidates == len(rows)
    assert summary.tasks["vector_add"].repeats == int(rows.reused.sum())


def test_no_best_is_below_the_correct_seed(run):
    out, summary, _ = run
    rows = pd.read_parquet(out / "evaluations")
    seed = rows[rows.generation == 0].iloc[0]
    assert seed.correct and seed.speedup > 0
    counted = summary.tasks["vector_add"].best_speedup
    if seed.timing_meaningful:
        assert counted >= seed.speedup
    else:  # the interpreter: no best by speed (evo.analysis.best), ranked by correctness
        assert counted is None and "ranked by correctness" in summary.text()
    results = metrics.load(out)
    assert metrics.task_table(results).loc["vector_add", "best_speedup"] >= seed.speedup
    best = metrics.best_speedup_by_generation(results)["vector_add"]
    assert best.loc[0] == seed.speedup and (best >= seed.speedup).all()


def test_the_reports_generation_0_counts_the_seed_once(run):
    out, _, _ = run
    results = metrics.load(out)
    seeds = results.evaluations[results.evaluations.generation == 0]
    first = metrics.by_generation(results).loc[0]
    assert first["evaluations"] == 1  # one scoring for three islands
    assert (first["exec_accuracy"], first["call_accuracy"], first["pass_at_1"]) == (1.0, 1.0, 1.0)
    fresh = seeds[~seeds.reused]
    assert first["gpu_s"] == pytest.approx(float(
        (fresh.compile_s + fresh.check_s + fresh.bench_s).sum()))
    assert metrics.task_table(results).loc["vector_add", "candidates"] == len(results.evaluations)


def test_progress_and_summary_count_candidates_once_and_say_eval_time(run):
    out, summary, printed = run
    rows = pd.read_parquet(out / "evaluations")
    assert "gen 0/2 vector_add: seed kernel correct, eval time " in printed
    last = [line for line in printed.splitlines() if "gen 2/2 vector_add island" in line][-1]
    # The last island to finish books the last rows: its line counts them all, repeats named.
    repeats = int(rows.reused.sum())
    assert f"{len(rows)} candidates on 3 islands ({repeats} reused)" in last
    assert repeats >= 2  # at least the two islands that took the seed's verdict
    text = summary.text()
    assert (f"vector_add: {candidates_text(len(rows), int(rows.reused.sum()))}, "
            f"{int(rows.correct.sum())} correct, best speedup") in text
    assert " s of eval time, " in text
    for wording in ("GPU", "device time", "scored)"):
        assert wording not in printed + text, wording
