"""Islands: k islands with migration_interval = 0 are k independent runs (STYLE §7)."""

import pandas as pd
import pytest

from evo import campaign, checkpoint, config as config_lib
from evo.records import candidate_id
from benchmarks.builtin import common

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out


def test_independent_islands_keep_their_own_population_and_generation(interpreter_fitness,
                                                                      tmp_path):
    config = config_lib.from_dict({
        "campaign": {"name": "islands", "tasks": ["vector_add"], "seed": 5},
        "search": {"generations": 2, "population": 3, "offspring": 3, "islands": 3,
                   "migration_interval": 0},
        "fitness": {"device": "interpreter", "workers": 2}})
    summary = campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)
    assert summary.generations_done == 2

    rows = pd.read_parquet(tmp_path / "run" / "evaluations")
    assert sorted(rows.island.unique()) == [0, 1, 2]
    baseline = candidate_id(common.baseline_source("vector_add"))
    for island, own in rows.groupby("island"):
        assert sorted(own.generation.unique()) == [1, 2]
        assert (own.groupby("generation").size() == 3).all()
        # No migration: every parent was bred on this island, or is the seed.
        bred_here = set(own.candidate_id) | {baseline}
        assert all(set(parents) <= bred_here for parents in own.parent_ids), island

    state = checkpoint.load(tmp_path / "run")
    islands = {key: value for key, value in state.islands.items()}
    assert sorted(islands) == [("vector_add", 0), ("vector_add", 1), ("vector_add", 2)]
    for (task, island), saved in islands.items():
        assert saved.generation_done == saved.population["generation"] == 2
        assert len(saved.population["logbook"]) == 3  # generation 0 (seeds), 1 and 2
        assert all(ind.candidate.island == island for ind in saved.population["population"])
    offspring_ids = [frozenset(rows[rows.island == i].candidate_id) for i in range(3)]
    assert len(set(offspring_ids)) == 3  # each island searched its own way
