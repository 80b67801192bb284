"""Adapters from the toolbox's uniform role call to the operators room's functions.

Every role is `async role(breeding, parents) -> Child`, so the toolbox can register any
of them under `generate`, `repair`, `improve` or `mate`. The operators are imported lazily:
offline campaigns never load the LLM client.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any, Sequence

from evo.records import Candidate, Evaluation, Task


@dataclasses.dataclass(frozen=True)
class Breeding:
    """What a role needs besides its parents, for one offspring slot.

    Attributes:
      history: the island's correct (Candidate, Evaluation) pairs, for the optimizer.
      rng: the island's seeded RNG (offline operators draw from it).
      backend: cuda | rocm | interpreter (offline operators pick backend-legal knobs).
      sample_index: unique per (generation, island, slot), part of the LLM request hash,
        so replay answers each slot with its own recorded reply.
    """

    task: Task
    client: Any
    context: Any
    history: tuple[tuple[Candidate, Evaluation], ...]
    rng: random.Random
    backend: str
    sample_index: int


@dataclasses.dataclass(frozen=True)
class Child:
    """A role's result: the new candidate, or None and why there is none."""

    candidate: Candidate | None
    operator: str
    failure: str = ""


def _child(offspring: Any, operator: str) -> Child:
    return Child(offspring.candidate, operator, offspring.failure or "")


async def llm_generate(breeding: Breeding, parents: Sequence) -> Child:
    from operators import generator

    return _child(await generator.generate(breeding.task, breeding.client, breeding.context,
                                           breeding.sample_index), "generator")


async def llm_reflect(breeding: Breeding, parents: Sequence) -> Child:
    from operators import reflector

    (parent,) = parents
    return _child(await reflector.reflect(breeding.task, parent.candidate, parent.evaluation,
                                          breeding.client, breeding.context,
                                          breeding.sample_index), "reflector")


async def llm_optimize(breeding: Breeding, parents: Sequence) -> Child:
    from operators import optimizer

    return _child(await optimizer.optimize(breeding.task, list(breeding.history),
                                           breeding.client, breeding.context,
                                           breeding.sample_index), "optimizer")


async def llm_crossover(breeding: Breeding, parents: Sequence) -> Child:
    from operators import crossover

    first, second = parents
    return _child(await crossover.crossover(
        breeding.task, first.candidate, second.candidate,
        (first.evaluation, second.evaluation), breeding.client, breeding.context,
        breeding.sample_index), "crossover")


async def offline_mutate(breeding: Breeding, parents: Sequence) -> Child:
    from operators import offline

    (parent,) = parents
    return Child(offline.mutate(breeding.task, parent.candidate, breeding.rng,
                                breeding.backend), "offline_mutation")


async def offline_crossover(breeding: Breeding, parents: Sequence) -> Child:
    from operators import offline

    first, second = parents
    return Child(offline.crossover(breeding.task, first.candidate, second.candidate,
                                   breeding.rng, breeding.backend), "offline_crossover")


async def offline_generate(breeding: Breeding, parents: Sequence) -> Child:
    """Offline stand-in for the generator: a fresh variant of the task's baseline."""
    from operators import offline
    from evo.records import make_candidate

    baseline = make_candidate(breeding.task.name, breeding.task.baseline_source)
    return Child(offline.mutate(breeding.task, baseline, breeding.rng, breeding.backend),
                 "offline_mutation")
