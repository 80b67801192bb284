"""Scoring a generation on the FitnessActors: each new candidate once, in completion order.

Islands breed concurrently (their `breed` calls are ObjectRefs); as each island's brood
arrives its candidates are submitted, so one island's candidates are scored while another
still waits on the LLM. Work in flight is bounded per actor and drained with `ray.wait`
(Ray's submit-then-wait pattern); every `ray.get` has a timeout. A candidate whose
(task, id) is already known is not submitted: its row reuses the known Evaluation.

Rows come back in a fixed order (island key, then slot) and the `reused` flag is decided
in that order, never in arrival order, so a redone generation gives identical rows.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Callable

import ray

from evo.records import Candidate, Evaluation, Task

POLL_S = 0.5
"""Longest pause between checks of deadlines while waiting on Ray."""


@dataclasses.dataclass(frozen=True)
class Scored:
    """One row to be: a bred candidate, its evaluation, and whether that was reused."""

    candidate: Candidate
    evaluation: Evaluation
    reused: bool


@dataclasses.dataclass
class Outcome:
    """A scored generation.

    Attributes:
      broods: island key -> its candidates' Scored, in slot order.
      new: (task, id) -> Evaluation for candidates scored for real this generation.
      gpu_seconds: compile_s + check_s + bench_s of those evaluations.
      waiting_s: wall time spent waiting on fitness (or on LLM-bound breeding).
    """

    broods: dict
    new: dict
    gpu_seconds: float
    waiting_s: float


def unanswered(candidate: Candidate, why: str) -> Evaluation:
    """Returns the Evaluation of a candidate the fitness actors could not score (not cached)."""
    return Evaluation(candidate_id=candidate.id, stage_reached="syntax", call_ok=False,
                      correct=False, failure_kind="worker_crash", error_trace=why)


class Scorer:
    """Feeds candidates to the FitnessActors and collects Evaluations."""

    def __init__(self, actors: list, tasks: dict[str, Task], max_in_flight_per_actor: int,
                 answer_timeout_s: float, brood_timeout_s: float):
        self._actors = list(actors)
        self._tasks = {name: ray.put(task) for name, task in tasks.items()}
        self._limit = max_in_flight_per_actor
        self._answer_timeout_s = answer_timeout_s
        self._brood_timeout_s = brood_timeout_s
        self._load = [0] * len(self._actors)
        self._dead: set[int] = set()
        self._unanswered: set = set()  # this generation's (task, id) the actors never scored

    def score(self, broods: dict, known: dict, recorded: dict, breeding_is_waiting: bool,
              on_result: Callable[[str, Evaluation], None] = lambda task, ev: None) -> Outcome:
        """Returns the generation's scored broods.

        broods: island key (task, island) -> ObjectRef of `Population.breed` (or `seeds`).
        known: (task, id) -> Evaluation from earlier generations (reused, not re-scored).
        recorded: (task, id) -> Evaluation from a part written before a kill; taken as
          the fitness answer so a redone generation's rows come out identical.
        breeding_is_waiting: count time spent waiting on breeding as LLM time, not engine time.
        """
        self._unanswered = set()
        pending = {ref: key for key, ref in broods.items()}
        deadline = {ref: time.monotonic() + self._brood_timeout_s for ref in pending}
        arrived: dict = {}
        fresh: dict = {}
        queue: collections.deque = collections.deque()
        in_flight: dict = {}
        waiting_s = 0.0
        while pending or queue or in_flight:
            self._submit(queue, in_flight)
            started = time.monotonic()
            ready = _ready(list(pending) + list(in_flight))
            if in_flight or (breeding_is_waiting and pending):
                waiting_s += time.monotonic() - started
            for ref in ready:
                if ref in pending:
                    key = pending.pop(ref)
                    arrived[key] = ray.get(ref, timeout=self._answer_timeout_s)
                    self._enqueue(arrived[key], known, recorded, fresh, queue, in_flight)
                else:
                    candidate, evaluation = self._collect(ref, in_flight)
                    fresh[(candidate.task, candidate.id)] = evaluation
                    on_result(candidate.task, evaluation)
            overdue = [ref for ref in pending if time.monotonic() > deadline[ref]]
            if overdue:
                raise TimeoutError(f"islands {[pending[ref] for ref in overdue]} did not hand "
                                   f"over their offspring within {self._brood_timeout_s:.0f} s")
            self._expire(in_flight, fresh)
        return self._outcome(broods, arrived, known, fresh, waiting_s)

    def _enqueue(self, candidates, known, recorded, fresh, queue, in_flight) -> None:
        queued = {(c.task, c.id) for c in queue}
        queued |= {(c.task, c.id) for c, _, _ in in_flight.values()}
        for candidate in candidates:
            key = (candidate.task, candidate.id)
            if key in known or key in fresh or key in queued:
                continue
            if key in recorded:
                fresh[key] = recorded[key]
            else:
                queue.append(candidate)
                queued.add(key)

    def _submit(self, queue, in_flight) -> None:
        while queue:
            alive = [i for i in range(len(self._actors)) if i not in self._dead]
            if not alive:
                raise RuntimeError("every fitness actor died or stopped answering; "
                                   "see the Ray logs (/tmp/ray/session_latest/logs)")
            index = min(alive, key=lambda i: self._load[i])
            if self._load[index] >= self._limit:
                return
            candidate = queue.popleft()
            ref = self._actors[index].evaluate.remote(self._tasks[candidate.task], candidate)
            in_flight[ref] = (candidate, index, time.monotonic() + self._answer_timeout_s)
            self._load[index] += 1

    def _collect(self, ref, in_flight) -> tuple[Candidate, Evaluation]:
        candidate, index, _ = in_flight.pop(ref)
        self._load[index] -= 1
        try:
            return candidate, ray.get(ref, timeout=self._answer_timeout_s)
        except ray.exceptions.RayActorError as error:
            self._dead.add(index)
            why = f"fitness actor {index} died: {error}"
        except ray.exceptions.RayTaskError as error:
            why = f"fitness actor {index} failed: {error}"
        self._unanswered.add((candidate.task, candidate.id))
        return candidate, unanswered(candidate, why)

    def _expire(self, in_flight, fresh) -> None:
        now = time.monotonic()
        for ref, (candidate, index, limit) in list(in_flight.items()):
            if now > limit:
                in_flight.pop(ref)
                self._dead.add(index)  # an actor that lets one answer hang is not trusted again
                self._unanswered.add((candidate.task, candidate.id))
                fresh[(candidate.task, candidate.id)] = unanswered(
                    candidate, f"fitness actor {index} gave no answer within "
                    f"{self._answer_timeout_s:.0f} s")

    def _outcome(self, broods, arrived, known, fresh, waiting_s) -> Outcome:
        seen = set(known)
        scored = {}
        for key in sorted(broods):
            rows = []
            for candidate in arrived[key]:
                ident = (candidate.task, candidate.id)
                evaluation = known.get(ident) or fresh[ident]
                rows.append(Scored(candidate, evaluation, reused=ident in seen))
                seen.add(ident)
            scored[key] = rows
        new = {ident: ev for ident, ev in fresh.items() if ident not in self._unanswered}
        gpu_seconds = sum(ev.compile_s + ev.check_s + ev.bench_s for ev in new.values())
        return Outcome(scored, new, gpu_seconds, waiting_s)


def _ready(refs: list) -> list:
    """Returns the refs that are done, waiting at most POLL_S for the first one."""
    if not refs:
        return []
    ready, rest = ray.wait(refs, num_returns=1, timeout=POLL_S)
    if ready and rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
        ready += more
    return ready
