"""The DEAP toolbox of one island: fitness, selection, hall of fame and the variation plan.

`build(config)` registers everything an island calls, with the knobs bound, so the loop in
`evo.population` only calls aliases (`select`, `survive`, `generate`, `repair`, `improve`,
`mate`). Ablation switches change what is registered here: with the reflector off,
`repair` is the generator; with crossover off, `crossover_rate` is 0; offline with
`generations_from`, `generate` is the generator answered from the file.

Selection never feeds on noise: where timing is not meaningful (the CPU interpreter, ROCm)
the speedup component of the fitness is 0 for every correct candidate, and ties are broken
by the island's seeded RNG, never by arrival order.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Sequence

from deap import base, tools

from evo.config import Config
from evo.records import Candidate, Evaluation

HALL_OF_FAME_SIZE = 8
"""Best distinct candidates an island remembers, whatever its population keeps."""


class KernelFitness(base.Fitness):
    """(correct, speedup), both maximized, compared lexicographically: correct first."""

    weights = (1.0, 1.0)


def fitness_values(evaluation: Evaluation) -> tuple[float, float]:
    """Returns the (correct, speedup) an evaluation earns; speedup counts only if timed for
    real and on every case (a screened clear loser ranks below every fully timed kernel)."""
    if not evaluation.correct:
        return (0.0, 0.0)
    speedup = evaluation.comparable_speedup
    return (1.0, speedup if evaluation.timing_meaningful and speedup is not None else 0.0)


@dataclasses.dataclass(eq=False)
class Individual:
    """A scored candidate with its DEAP fitness; what populations and the hall of fame hold."""

    candidate: Candidate
    evaluation: Evaluation
    fitness: KernelFitness = dataclasses.field(default_factory=KernelFitness)

    def __post_init__(self) -> None:
        if not self.fitness.valid:
            self.fitness.values = fitness_values(self.evaluation)

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def correct(self) -> bool:
        return self.evaluation.correct


def same_candidate(a: Individual, b: Individual) -> bool:
    """The hall of fame's `similar`: two individuals are the same kernel iff their ids match."""
    return a.id == b.id


def new_hall_of_fame() -> tools.HallOfFame:
    """Returns an empty hall of fame that keeps each candidate id at most once."""
    return tools.HallOfFame(HALL_OF_FAME_SIZE, similar=same_candidate)


def rank(individuals: Sequence[Individual], rng: random.Random) -> list[Individual]:
    """Returns the individuals best first; equal fitnesses are ordered by `rng`."""
    shuffled = list(individuals)
    rng.shuffle(shuffled)
    return sorted(shuffled, key=lambda ind: ind.fitness.wvalues, reverse=True)


def sel_tournament(individuals: Sequence[Individual], k: int, rng: random.Random,
                   tournsize: int) -> list[Individual]:
    """Returns k winners of tournaments of `tournsize` drawn with `rng` (ties go to `rng`)."""
    winners = []
    for _ in range(k):
        entrants = [rng.choice(individuals) for _ in range(tournsize)]
        winners.append(rank(entrants, rng)[0])
    return winners


def sel_survivors(individuals: Sequence[Individual], k: int,
                  rng: random.Random) -> list[Individual]:
    """Returns the best k distinct individuals (elitist replacement, mu + lambda)."""
    distinct = list({ind.id: ind for ind in individuals}.values())
    return rank(distinct, rng)[:k]


def build(config: Config) -> base.Toolbox:
    """Returns the toolbox of one island for `config` (knobs bound, roles registered)."""
    search, ops = config.search, config.operators
    toolbox = base.Toolbox()
    toolbox.register("select", sel_tournament, tournsize=search.tournament_size)
    toolbox.register("survive", sel_survivors)
    toolbox.max_debug_attempts = search.max_debug_attempts
    if ops.mode == "offline":  # no LLM client is imported, unless a file plays the generator
        from operators import offline

        if ops.generations_from:
            from operators import generator

            toolbox.register("generate", generator.generator)
        else:
            toolbox.register("generate", offline.offline_fresh)
        toolbox.register("repair", offline.offline_mutation)
        toolbox.register("improve", offline.offline_mutation)
        toolbox.register("mate", offline.offline_crossing)
        toolbox.crossover_rate = search.crossover_rate
        return toolbox
    from operators import crossover, generator, optimizer, reflector

    toolbox.register("generate", generator.generator)
    toolbox.register("repair", reflector.reflector if ops.reflector else generator.generator)
    toolbox.register("improve", optimizer.optimizer if ops.optimizer else generator.generator)
    toolbox.register("mate", crossover.llm_crossover)
    toolbox.crossover_rate = search.crossover_rate if ops.crossover else 0.0
    return toolbox


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one offspring slot will be: a toolbox role and its parents.

    `abandons` names a failing parent whose lineage hit max_debug_attempts: the island
    drops it, and the slot calls the generator instead of debugging it again.
    """

    role: str
    parents: tuple[Individual, ...] = ()
    abandons: str | None = None


def debug_depth(individual: Individual, repair_attempts: dict[str, int]) -> int:
    """Returns how many times in a row this lineage has failed to be fixed."""
    return individual.candidate.lineage_debug_count + repair_attempts.get(individual.id, 0)


def plan_offspring(population: Sequence[Individual], n: int, toolbox: base.Toolbox,
                   rng: random.Random, repair_attempts: dict[str, int]) -> list[Plan]:
    """Returns a plan per offspring slot (docs/design.md, "The loop", step 2).

    empty island -> generate; two correct parents (with probability crossover_rate) ->
    mate; correct parent -> improve; failing parent -> repair, unless its lineage failed
    max_debug_attempts times in a row: then it is abandoned and the slot generates.
    """
    pool = list(population)
    plans = []
    for _ in range(n):
        correct = [ind for ind in pool if ind.correct]
        if not pool:
            plans.append(Plan("generate"))
        elif len(correct) >= 2 and rng.random() < toolbox.crossover_rate:
            first = toolbox.select(correct, 1, rng)[0]
            second = toolbox.select([ind for ind in correct if ind is not first], 1, rng)[0]
            plans.append(Plan("mate", (first, second)))
        else:
            parent = toolbox.select(pool, 1, rng)[0]
            if parent.correct:
                plans.append(Plan("improve", (parent,)))
            elif debug_depth(parent, repair_attempts) >= toolbox.max_debug_attempts:
                pool.remove(parent)
                plans.append(Plan("generate", abandons=parent.id))
            else:
                plans.append(Plan("repair", (parent,)))
    return plans

