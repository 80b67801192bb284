"""Island bookkeeping: fitness, selection, hall of fame, variation plans, routing, migration."""

import asyncio
import dataclasses
import random

import pytest

from evo import config as config_lib
from evo import migration, toolbox as toolbox_lib
from operators import generator, offline, optimizer, reflector
from evo.population import Population
from evo.records import Evaluation, Task, make_candidate
from evo.toolbox import Individual

TASK = Task(name="demo", suite="builtin", instruction="write demo", reference=None,
            baseline_source="def demo(x):\n    return x\n", entry_point="demo", make_inputs=None,
            cases=(), interpreter_cases=(), tolerance={}, flops=None, bytes=None, difficulty=1)


def _config(**search):
    return config_lib.from_dict({"campaign": {"name": "t", "tasks": ["demo"], "seed": 3},
                                 "search": {"population": 3, "offspring": 4, **search}})


def _individual(tag, correct, speedup=None, meaningful=True, island=0, debug=0):
    candidate = make_candidate("demo", f"def demo(x):\n    return x  # {tag}\n{tag} = 1\n",
                               island=island, lineage_debug_count=debug)
    evaluation = Evaluation(candidate.id, "timed" if correct else "correct", call_ok=True,
                            correct=correct, failure_kind=None if correct else "mismatch",
                            speedup=speedup, timing_meaningful=meaningful,
                            latency_us=() if speedup is None else (1.0,))  # timed on its one case
    return Individual(candidate, evaluation)


def test_fitness_is_correct_first_then_speedup():
    slow_right = _individual("a", True, 0.5)
    fast_wrong = _individual("b", False, 9.0)
    fast_right = _individual("c", True, 2.0)
    assert fast_right.fitness > slow_right.fitness > fast_wrong.fitness


def test_interpreter_latency_never_ranks_candidates():
    noisy_fast = _individual("a", True, 5.0, meaningful=False)
    noisy_slow = _individual("b", True, 0.2, meaningful=False)
    assert noisy_fast.fitness.values == noisy_slow.fitness.values == (1.0, 0.0)


def test_ties_are_broken_by_the_seeded_rng_not_by_order():
    tied = [_individual(str(i), True, 1.0, meaningful=False) for i in range(6)]
    firsts = {toolbox_lib.rank(tied, random.Random(seed))[0].id for seed in range(20)}
    assert len(firsts) > 1
    assert (toolbox_lib.rank(tied, random.Random(7))[0].id
            == toolbox_lib.rank(tied, random.Random(7))[0].id)


def test_hall_of_fame_keeps_the_best_and_each_id_once():
    hof = toolbox_lib.new_hall_of_fame()
    best = _individual("best", True, 3.0)
    hof.update([best])
    hof.update([_individual(f"worse{i}", True, 1.0 + i / 100) for i in range(20)])
    hof.update([best, dataclasses.replace(best)])
    assert hof[0].id == best.id
    ids = [ind.id for ind in hof]
    assert len(ids) == len(set(ids)) == toolbox_lib.HALL_OF_FAME_SIZE


def test_plans_follow_the_parents_state():
    toolbox = toolbox_lib.build(_config(crossover_rate=0.0))
    rng = random.Random(0)
    assert {p.role for p in toolbox_lib.plan_offspring([], 3, toolbox, rng, {})} == {"generate"}
    right = [_individual("r", True, 1.0)]
    assert {p.role for p in toolbox_lib.plan_offspring(right, 3, toolbox, rng, {})} == {"improve"}
    wrong = [_individual("w", False)]
    plans = toolbox_lib.plan_offspring(wrong, 3, toolbox, rng, {})
    assert {p.role for p in plans} == {"repair"} and plans[0].parents[0].id == wrong[0].id


def test_two_correct_parents_mate_when_crossover_is_on():
    toolbox = toolbox_lib.build(_config(crossover_rate=1.0))
    pair = [_individual("a", True, 1.0), _individual("b", True, 1.0)]
    plans = toolbox_lib.plan_offspring(pair, 4, toolbox, random.Random(0), {})
    assert all(p.role == "mate" and p.parents[0] is not p.parents[1] for p in plans)


def test_lineage_stuck_in_the_debugging_trap_is_abandoned_for_the_generator():
    toolbox = toolbox_lib.build(_config(max_debug_attempts=3))
    stuck = _individual("stuck", False, debug=2)
    plans = toolbox_lib.plan_offspring([stuck], 2, toolbox, random.Random(0), {stuck.id: 1})
    assert plans[0].role == "generate" and plans[0].abandons == stuck.id
    assert plans[1].role == "generate" and plans[1].abandons is None  # island now empty


def test_ablation_switches_change_what_is_registered():
    llm = {"mode": "llm", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    full = toolbox_lib.build(config_lib.from_dict({"campaign": {"name": "t"}, "operators": llm}))
    assert full.repair.func is reflector.reflector and full.improve.func is optimizer.optimizer
    ablated = toolbox_lib.build(config_lib.from_dict({"campaign": {"name": "t"}, "operators": {
        **llm, "reflector": False, "optimizer": False, "crossover": False}}))
    assert ablated.repair.func is generator.generator and ablated.improve.func is generator.generator
    assert ablated.crossover_rate == 0.0
    offline_toolbox = toolbox_lib.build(_config())
    assert offline_toolbox.mate.func is offline.offline_crossing


def test_replace_keeps_the_best_and_refuses_a_candidate_of_another_island():
    island = Population(TASK, 1, _config(), "interpreter")
    scored = [(ind.candidate, ind.evaluation) for ind in
              (_individual(t, c, 1.0, island=1) for t, c in
               [("a", True), ("b", False), ("c", True), ("d", False)])]
    record = island.replace(1, scored)
    assert record["evaluated"] == 4 and record["correct"] == 2 and island.generation == 1
    assert len(island.population) == 3 and sum(ind.correct for ind in island.population) == 2
    stray = _individual("e", True, 1.0, island=0)
    with pytest.raises(ValueError, match="routed to"):
        island.replace(2, [(stray.candidate, stray.evaluation)])


def test_abandoned_lineage_leaves_the_population():
    island = Population(TASK, 0, _config(max_debug_attempts=1, offspring=1), "interpreter")
    stuck = _individual("stuck", False, debug=1)
    island.replace(1, [(stuck.candidate, stuck.evaluation)])
    plans = toolbox_lib.plan_offspring(island.population, 1, island.toolbox, island.rng, {})
    island._abandoned.add(plans[0].abandons)
    island.replace(2, [])
    assert island.population == []


def test_state_restore_continues_identically():
    first = Population(TASK, 0, _config(), "interpreter")
    first.replace(1, [(i.candidate, i.evaluation) for i in
                      (_individual(t, True, 1.0, meaningful=False) for t in "abcde")])
    saved = first.state()
    second = Population(TASK, 0, _config(), "interpreter")
    second.restore(saved)
    draw = lambda pop: [p.role + ",".join(x.id for x in p.parents) for p in
                        toolbox_lib.plan_offspring(pop.population, 5, pop.toolbox, pop.rng, {})]
    import pickle
    third = Population(TASK, 0, _config(), "interpreter")
    third.restore(pickle.loads(pickle.dumps(saved)))
    assert draw(first) == draw(second) == draw(third)


def test_migration_ring_moves_each_islands_best_to_the_next():
    islands = [Population(TASK, i, _config(), "interpreter") for i in range(3)]
    for i, island in enumerate(islands):
        best = _individual(f"best{i}", True, 2.0 + i, island=i)
        rest = [_individual(f"x{i}{j}", True, 1.0, island=i) for j in range(2)]
        island.replace(1, [(ind.candidate, ind.evaluation) for ind in [*rest, best]])
    emigrants = [island.best(1) for island in islands]
    for island, arrivals in zip(islands, migration.ring(emigrants)):
        island.receive(arrivals)
    for i, island in enumerate(islands):
        came_from = (i - 1) % 3
        assert emigrants[came_from][0].id in {ind.id for ind in island.population}
        assert len(island.population) == 3


def test_migration_schedule():
    assert [g for g in range(7) if migration.due(g, 2)] == [2, 4, 6]
    assert not any(migration.due(g, 0) for g in range(7))


def test_seed_is_the_baseline_stamped_with_its_island():
    island = Population(TASK, 2, _config(islands=3), "interpreter")
    seed = asyncio.run(island.seeds())[0]
    assert seed.operator == "seed" and seed.island == 2 and seed.generation == 0
    assert seed.source == TASK.baseline_source


def test_history_keeps_only_the_best_and_matches_an_unbounded_one():
    """An island remembers its HISTORY_SIZE best correct candidates, not all of them (a night's
    campaign would otherwise grow without end), and its history is what ranking every correct
    candidate ever seen would give: ties in arrival order, a returning id at its first place."""
    from evo.population import HISTORY_SIZE

    island = Population(TASK, 0, _config(), "interpreter")
    arrivals = [_individual(f"h{i}", True, float(i % 5)) for i in range(30)]
    seen = []
    for start in range(0, 30, 4):
        batch = arrivals[start:start + 4] + ([arrivals[0]] if start else [])  # one returns
        island._remember(batch)
        seen += [ind for ind in batch if ind.id not in {s.id for s in seen} and ind.correct]
        unbounded = sorted(seen, key=lambda ind: ind.fitness.values[1])[-HISTORY_SIZE:]
        assert [c.id for c, _ in island._history()] == [ind.id for ind in unbounded]
        assert len(island.correct_seen) <= HISTORY_SIZE
