"""One island of one task: its population, hall of fame, logbook and breeding.

`Population` is a plain class (unit-tested directly) that the campaign runs as a Ray actor,
`PopulationActor`, one per (task, island). Its `breed` is async, so while one slot waits on
the LLM the actor's other slots (and other islands' candidates on the fitness actors) move.

Every candidate bred here carries this island and the generation in its record; `replace`
refuses a scored candidate of another island or task (OpenEvolve's children all landed on
island 0 for months because the island was a "current island" variable).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from typing import Any

import ray
from deap import tools

from evo import toolbox as toolbox_lib
from evo.config import Config
from evo.records import Breeding, Candidate, Child, Evaluation, Task, make_candidate
from evo.toolbox import Individual, Plan

HISTORY_SIZE = 8
"""Correct candidates the optimizer is shown (the island's best)."""


class Population:
    """The island `island` of `task`.

    Attributes:
      population: the individuals kept (elitist, at most search.population).
      hall_of_fame: the best distinct candidates ever seen here (DEAP, deduplicated by id).
      logbook: one record per generation (DEAP Logbook).
      generation: the last generation this island replaced; each island counts its own.

    `client` is the LLM client (None offline); `knowledge` the hardware sheet for prompts.
    """

    def __init__(self, task: Task, island: int, config: Config, backend: str,
                 client: Any = None, knowledge: str = ""):
        self.task, self.island, self.config, self.backend = task, island, config, backend
        self.client = client
        self.knowledge = knowledge
        self.toolbox = toolbox_lib.build(config)
        self.rng = random.Random(f"{config.campaign.seed}:{task.name}:{island}")  # its own draws
        self.population: list[Individual] = []
        self.hall_of_fame = toolbox_lib.new_hall_of_fame()
        self.logbook = tools.Logbook()
        self.generation = 0
        self.correct_seen: dict[str, Individual] = {}  # the HISTORY_SIZE best correct, by arrival
        self.correct_ids: set[str] = set()  # every correct id seen: a returning one keeps its place
        self.repair_attempts: dict[str, int] = {}
        self._abandoned: set[str] = set()
        self._failures: list[str] = []
        self._unusable: dict[int, str] = {}  # sample index -> why its answer gave no candidate

    def ready(self) -> bool:
        """Returns True once the actor is up (the driver waits, so start-up is not engine time)."""
        return True

    # -- breeding ---------------------------------------------------------------------------

    async def seeds(self) -> list[Candidate]:
        """Returns the generation-0 candidates: the baseline when seeding with it, and with
        `operators.generations_from` the generator's answer, which that file gives."""
        seeds = []
        if self.config.campaign.seed_with_baseline:
            seeds.append(make_candidate(self.task.name, self.task.baseline_source,
                                        operator="seed", generation=0, island=self.island))
        if self.config.operators.generations_from:
            seeds += await self._offspring([Plan("generate")], 0)
        return seeds

    async def breed(self, generation: int) -> list[Candidate]:
        """Returns this generation's offspring, in slot order (failed slots left out)."""
        plans = toolbox_lib.plan_offspring(self.population, self.config.search.offspring,
                                           self.toolbox, self.rng, self.repair_attempts)
        for plan in plans:
            if plan.abandons:
                self._abandoned.add(plan.abandons)
            if plan.role == "repair":
                parent_id = plan.parents[0].id
                self.repair_attempts[parent_id] = self.repair_attempts.get(parent_id, 0) + 1
        return await self._offspring(plans, generation)

    async def _offspring(self, plans: list[Plan], generation: int) -> list[Candidate]:
        """Returns the children the plans give, in slot order; books the slots that gave none."""
        history = self._history()
        children = await asyncio.gather(*(
            self._vary(plan, Breeding(self.task, self.client, self._context(generation), history,
                                      self.rng, self.backend, self._sample_index(generation, slot)))
            for slot, plan in enumerate(plans)))
        self._failures = [child.failure for child in children if child.candidate is None]
        self._unusable.update({self._sample_index(generation, slot): child.failure
                               for slot, child in enumerate(children) if child.candidate is None})
        return [self._place(child, plan, generation)
                for child, plan in zip(children, plans) if child.candidate is not None]

    async def _vary(self, plan: Plan, breeding: Breeding) -> Child:
        role = getattr(self.toolbox, plan.role)
        try:
            return await role(breeding, plan.parents)
        except Exception as error:  # noqa: BLE001 - one failed operator must not stop the campaign
            if self.client is not None:
                from operators.replay import ReplayMissError

                if isinstance(error, ReplayMissError):  # a misconfigured replay: stop, say why
                    raise
            # A refused budget lands here too: the slot fails, the driver stops the campaign.
            return Child(None, plan.role, f"{type(error).__name__}: {error}")

    def _place(self, child: Child, plan: Plan, generation: int) -> Candidate:
        """Returns the child stamped with its island, generation, parents and lineage depth."""
        debugging = plan.role == "repair"
        depth = plan.parents[0].candidate.lineage_debug_count + 1 if debugging else 0
        return dataclasses.replace(
            child.candidate, task=self.task.name, operator=child.operator,
            parents=tuple(parent.id for parent in plan.parents), generation=generation,
            island=self.island, lineage_debug_count=depth)

    def _history(self) -> tuple[tuple[Candidate, Evaluation], ...]:
        """Returns the island's best correct candidates, ascending by speedup (optimizer input)."""
        return tuple((ind.candidate, ind.evaluation) for ind in self._ranked()[-HISTORY_SIZE:])

    def _ranked(self) -> list[Individual]:
        """Returns the kept correct candidates ascending by speedup, ties in arrival order."""
        return sorted(self.correct_seen.values(), key=lambda ind: ind.fitness.values[1])

    def _context(self, generation: int) -> Any:
        if self.client is None:
            return None
        from operators.context import OperatorContext

        ops = self.config.operators
        return OperatorContext(generation=generation, island=self.island,
                               temperature=self.config.search.temperature,
                               one_shot=ops.one_shot, backend=self.backend,
                               max_history=HISTORY_SIZE, knowledge=self.knowledge)

    def _sample_index(self, generation: int, slot: int) -> int:
        """Returns a number unique to one offspring slot of the task, for the LLM request hash."""
        search = self.config.search
        return (generation * search.islands + self.island) * search.offspring + slot

    # -- replacement, migration -------------------------------------------------------------

    def replace(self, generation: int, scored: list[tuple[Candidate, Evaluation]]) -> dict:
        """Folds scored offspring into the island (elitist) and returns the logbook record."""
        for candidate, evaluation in scored:
            if (candidate.task, candidate.island) != (self.task.name, self.island):
                raise ValueError(f"candidate {candidate.id} of ({candidate.task!r}, island "
                                 f"{candidate.island}) was routed to ({self.task.name!r}, "
                                 f"island {self.island})")
            if evaluation.candidate_id != candidate.id:
                raise ValueError(f"evaluation of {evaluation.candidate_id} paired with "
                                 f"candidate {candidate.id}")
        offspring = [Individual(candidate, evaluation) for candidate, evaluation in scored]
        kept = [ind for ind in self.population if ind.id not in self._abandoned]
        self.population = self.toolbox.survive(kept + offspring, self.config.search.population,
                                               self.rng)
        self._remember(offspring)
        record = {"gen": generation, "evaluated": len(offspring),
                  "correct": sum(ind.correct for ind in offspring),
                  "failed_offspring": len(self._failures), "abandoned": len(self._abandoned),
                  "population": len(self.population), "best": self.best_values()}
        self.logbook.record(**record)
        self.generation = generation
        self._abandoned, self._failures = set(), []
        return record

    def best_values(self) -> tuple[float, float] | None:
        """Returns the hall of fame's best (correct, speedup), None before any evaluation."""
        return tuple(self.hall_of_fame[0].fitness.values) if len(self.hall_of_fame) else None

    def best(self, k: int) -> list[Individual]:
        """Returns the k best individuals of the population (ties keep population order)."""
        return sorted(self.population, key=lambda ind: ind.fitness.wvalues, reverse=True)[:k]

    def receive(self, migrants: list[Individual]) -> None:
        """Adds migrants not already here; the population keeps its size (elitist)."""
        present = {ind.id for ind in self.population}
        fresh = [ind for ind in migrants if ind.id not in present]
        self.population = self.toolbox.survive(self.population + fresh,
                                               self.config.search.population, self.rng)
        self._remember(fresh)

    def _remember(self, arrivals: list[Individual]) -> None:
        """Books new individuals in the hall of fame and, if correct, the optimizer's history."""
        self.hall_of_fame.update(arrivals)
        for ind in arrivals:
            if ind.correct and ind.id not in self.correct_ids:
                self.correct_ids.add(ind.id)
                self.correct_seen[ind.id] = ind
        if len(self.correct_seen) > HISTORY_SIZE:  # one outside the best can never come back in
            best = {ind.id for ind in self._ranked()[-HISTORY_SIZE:]}
            self.correct_seen = {i: ind for i, ind in self.correct_seen.items() if i in best}

    # -- checkpoint -------------------------------------------------------------------------

    def drain_calls(self) -> list[dict]:
        """Returns the LLM call rows since the last drain (none offline).

        A call answered with no usable code (the parser's `no_code_block`, `syntax_error`...)
        succeeded for the client; its row gets the parser's word as `failure_kind` and its
        reason as `error`, so it counts as the failure it is for the user and the breaker.
        """
        if self.client is None:
            return []
        rows = self.client.drain_calls()
        for row in rows:
            why = self._unusable.get(row["sample_index"])
            if row["success"] and why:
                row.update(failure_kind=why.partition(":")[0], error=why)
        self._unusable = {}
        return rows

    def state(self) -> dict:
        """Returns everything needed to continue this island exactly (picklable)."""
        return {"rng": self.rng.getstate(), "population": self.population,
                "hall_of_fame": self.hall_of_fame, "logbook": self.logbook,
                "generation": self.generation, "correct_seen": self.correct_seen,
                "correct_ids": self.correct_ids, "repair_attempts": self.repair_attempts}

    def restore(self, state: dict) -> None:
        self.rng.setstate(state["rng"])
        self.population = state["population"]
        self.hall_of_fame = state["hall_of_fame"]
        self.logbook = state["logbook"]
        self.generation = state["generation"]
        self.correct_seen = state["correct_seen"]
        self.correct_ids = state.get("correct_ids", set(self.correct_seen))  # older checkpoints
        self.repair_attempts = state["repair_attempts"]


PopulationActor = ray.remote(num_cpus=0)(Population)
