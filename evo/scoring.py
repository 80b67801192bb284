"""Scoring broods on the FitnessActors: one queue for every island, each new candidate once.

The new candidates of every island's brood (`submit`) join one first-come queue that feeds
the least-loaded live actor up to `max_in_flight_per_actor`, so every actor is busy whichever
islands have work. A free actor takes, among the first `AFFINITY_LOOKAHEAD` queued, the first
of a task it has scored, else of a task no actor has had, else the head: an actor compiles
and times a task's baseline once, a cost that spreading every task over every GPU would
multiply. The driver drains `refs()` with `ray.wait` and hands what finished to `collect`.

A brood reuses only its island's own `known` verdicts (`reused` decided in slot order), so
an island's rows depend on its seed alone and a redone generation gives identical rows. An
actor that dies or misses a deadline is replaced and what it held goes back to the head of
the queue, nothing lost or booked twice. An actor whose device is out (DeviceUnresponsive: a
kernel that never ended left the GPU busy) gets nothing more; what it held goes back to the
queue for the others, and with none left the campaign ends (`fatal`).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import time
from typing import Callable

import ray

from evo import actor_faults, fatal
from evo.records import Candidate, Evaluation, Task

POLL_S = 0.5
"""Longest pause between checks of deadlines while waiting on Ray."""

NOTE_TIMEOUT_S = 10.0
"""How long `lingering` waits for an actor to say what it is doing."""

AFFINITY_LOOKAHEAD = 64
"""How far down the queue an actor looks for a candidate of a task it already knows."""


@dataclasses.dataclass(frozen=True)
class Scored:
    """One row to be: a bred candidate, its evaluation, and whether that was reused."""

    candidate: Candidate
    evaluation: Evaluation
    reused: bool


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A scored brood.

    Attributes:
      scored: its candidates' Scored, in slot order.
      new: candidate id -> Evaluation for candidates scored for real (or taken from a part
        written before a kill); answers the actors never gave are left out.
      gpu_seconds: compile_s + check_s + bench_s of those evaluations.
    """

    scored: list
    new: dict
    gpu_seconds: float


@dataclasses.dataclass
class _Brood:
    """A brood being scored: what it reuses, what came back, what is still out."""

    candidates: list
    known: dict
    fresh: dict = dataclasses.field(default_factory=dict)
    waiting: set = dataclasses.field(default_factory=set)
    unanswered: set = dataclasses.field(default_factory=set)

    def outcome(self) -> Outcome:
        seen = set(self.known)
        scored = []
        for candidate in self.candidates:
            evaluation = self.known.get(candidate.id) or self.fresh[candidate.id]
            scored.append(Scored(candidate, evaluation, reused=candidate.id in seen))
            seen.add(candidate.id)
        new = {ident: ev for ident, ev in self.fresh.items() if ident not in self.unanswered}
        gpu_seconds = sum(ev.compile_s + ev.check_s + ev.bench_s for ev in new.values())
        return Outcome(scored, new, gpu_seconds)


def unanswered(candidate: Candidate, why: str) -> Evaluation:
    """Returns the Evaluation of a candidate the fitness actors could not score (not cached)."""
    return Evaluation(candidate_id=candidate.id, stage_reached="syntax", call_ok=False,
                      correct=False, failure_kind="worker_crash", error_trace=why)


def _cannot_replace(index: int, cause: str, resubmitted: int):
    raise RuntimeError(f"fitness actor {index} died ({cause}) and this scorer was given no "
                       f"way to replace it")


class Scorer:
    """Feeds every island's candidates to the FitnessActors and collects Evaluations.

    `on_result(task, evaluation)` is called for each candidate scored on an actor.
    `replace(index, cause, resubmitted)` returns a fresh actor in place of actor `index`,
    which died (or hung) of `cause` holding `resubmitted` evaluations, or raises.
    """

    def __init__(self, actors: list, tasks: dict[str, Task], max_in_flight_per_actor: int,
                 answer_timeout_s: float,
                 on_result: Callable[[str, Evaluation], None] = lambda task, ev: None,
                 replace: Callable[[int, str, int], object] = _cannot_replace):
        self._actors = list(actors)
        self._tasks = {name: ray.put(task) for name, task in tasks.items()}
        self._limit = max_in_flight_per_actor
        self._answer_timeout_s = answer_timeout_s
        self._on_result = on_result
        self._replace = replace
        self._load = [0] * len(self._actors)
        self._homes: dict[str, set[int]] = {}  # task -> actors that have scored it
        self._broods: dict = {}  # island key -> _Brood
        self._queue: collections.deque = collections.deque()  # (island key, candidate)
        self._in_flight: dict = {}  # ref -> (island key, candidate, actor index, sent, deadline)
        self._finished: dict = {}  # island key -> Outcome, until `collect` hands it over
        self._out: dict[int, str] = {}  # actor index -> why its device is out of the campaign

    def submit(self, key, candidates: list[Candidate], known: dict, recorded: dict) -> None:
        """Opens island `key`'s brood (one at a time per island) and queues its new candidates.

        known: candidate id -> Evaluation the island may reuse (not re-scored).
        recorded: candidate id -> Evaluation from this brood's part written before a kill;
          taken as the fitness answer so a redone generation's rows come out identical.
        """
        if key in self._broods:
            raise RuntimeError(f"island {key} submitted a brood while its last is being scored")
        brood = _Brood(list(candidates), known)
        for candidate in candidates:
            ident = candidate.id
            if ident in known or ident in brood.fresh or ident in brood.waiting:
                continue
            if ident in recorded:
                brood.fresh[ident] = recorded[ident]
            else:
                self._queue.append((key, candidate))
                brood.waiting.add(ident)
        self._broods[key] = brood
        self._finish_if_complete(key)
        self._dispatch()

    def refs(self) -> list:
        """Returns the evaluations in flight (to `ray.wait` on)."""
        return list(self._in_flight)

    def busy(self) -> bool:
        """True while a brood is queued, in flight or finished but not yet collected."""
        return bool(self._broods or self._finished)

    def in_flight(self) -> bool:
        """True while an actor holds one of our candidates."""
        return bool(self._in_flight)

    def lingering(self, after_s: float) -> list[tuple]:
        """Returns (island key, candidate, seconds out, its actor's `in_progress` entry for
        it or None) for each evaluation out longer than `after_s`, longest first. An actor
        that does not answer within `NOTE_TIMEOUT_S` is left unasked: this only explains a
        wait, it must not add one."""
        now = time.monotonic()
        out = sorted(((now - sent, key, candidate, index)
                      for key, candidate, index, sent, _ in self._in_flight.values()
                      if now - sent > after_s), key=lambda entry: -entry[0])
        asked = {index: self._actors[index].in_progress.remote()
                 for index in sorted({index for *_, index in out})}
        doing: dict = {}
        for index, ref in asked.items():
            try:
                doing[index] = ray.get(ref, timeout=NOTE_TIMEOUT_S)
            except (ray.exceptions.GetTimeoutError, ray.exceptions.RayError):
                doing[index] = []
        return [(key, candidate, out_s, next((snapshot for snapshot in doing[index]
                                              if snapshot["candidate_id"] == candidate.id), None))
                for out_s, key, candidate, index in out]

    def collect(self, ready: list) -> dict:
        """Books the finished evaluations among `ready` (other refs are ignored), expires
        overdue ones, refills the actors; returns island key -> Outcome of broods now done."""
        for ref in ready:
            answer = self._answer(ref) if ref in self._in_flight else None
            if answer is not None:
                self._book(*answer)
        self._expire()
        self._dispatch()
        finished, self._finished = self._finished, {}
        return finished

    def _dispatch(self) -> None:
        live = [index for index in range(len(self._actors)) if index not in self._out]
        while self._queue and live:
            index = min(live, key=lambda i: self._load[i])
            if self._load[index] >= self._limit:
                return
            key, candidate = self._take(index)
            self._homes.setdefault(candidate.task, set()).add(index)
            ref = self._actors[index].evaluate.remote(self._tasks[candidate.task], candidate)
            sent = time.monotonic()
            self._in_flight[ref] = (key, candidate, index, sent, sent + self._answer_timeout_s)
            self._load[index] += 1

    def _take(self, index: int) -> tuple:
        """Removes and returns the queued (island key, candidate) that actor `index` takes."""
        tasks = [candidate.task for _, candidate in itertools.islice(self._queue, AFFINITY_LOOKAHEAD)]
        position = pick(tasks, index, self._homes)
        chosen = self._queue[position]
        del self._queue[position]
        return chosen

    def _answer(self, ref) -> tuple | None:
        """Returns (island key, candidate, Evaluation) of a finished evaluation, or None when
        its actor died (the actor is replaced) or its device is out (`_take_out`): the
        candidate is queued again."""
        key, candidate, index, _, _ = self._in_flight[ref]
        try:
            evaluation = ray.get(ref, timeout=self._answer_timeout_s)
        except ray.exceptions.RayActorError as error:
            self._replace_actor(index, actor_faults.why(error))
            return None
        except ray.exceptions.RayTaskError as error:
            lost = fatal.carried(error, "DeviceUnresponsive")
            if lost is not None:
                self._take_out(index, lost)
                return None
            self._broods[key].unanswered.add(candidate.id)
            evaluation = unanswered(candidate, f"fitness actor {index} failed: {error}")
        del self._in_flight[ref]
        self._load[index] -= 1
        return key, candidate, evaluation

    def _expire(self) -> None:
        """Replaces each actor that let an answer pass its deadline: it is not trusted again."""
        now = time.monotonic()
        overdue = sorted({index for *_, index, _, deadline in self._in_flight.values()
                          if now > deadline})
        for index in overdue:
            self._replace_actor(index, f"no answer within {self._answer_timeout_s:.0f} s")

    def _replace_actor(self, index: int, cause: str) -> None:
        """Puts a fresh actor in place of actor `index` and queues again the evaluations it
        held (`_requeue`)."""
        held = self._requeue(index)
        self._actors[index] = self._replace(index, cause, held)

    def _take_out(self, index: int, cause: str) -> None:
        """Sends actor `index` nothing more (its device is out: `cause`) and queues again
        what it held; raises fatal.Fatal when no actor is left."""
        self._out[index] = cause
        self._requeue(index)
        print(f"fitness actor {index} is out of the campaign: {cause}", flush=True)
        if len(self._out) == len(self._actors):
            raise fatal.Fatal(f"every fitness device is out of the campaign; the last: {cause}")

    def _requeue(self, index: int) -> int:
        """Queues again, at the head and in the order they were sent, the evaluations actor
        `index` held; returns how many."""
        held = sorted(((sent, ref) for ref, (*_, holder, sent, _) in self._in_flight.items()
                       if holder == index), key=lambda entry: entry[0])
        for _, ref in reversed(held):
            key, candidate, *_ = self._in_flight.pop(ref)
            self._queue.appendleft((key, candidate))
        self._load[index] = 0
        for homes in self._homes.values():
            homes.discard(index)  # a fresh actor times each task's baseline again
        return len(held)

    def _book(self, key, candidate: Candidate, evaluation: Evaluation) -> None:
        brood = self._broods[key]
        brood.fresh[candidate.id] = evaluation
        brood.waiting.discard(candidate.id)
        self._on_result(candidate.task, evaluation)
        self._finish_if_complete(key)

    def _finish_if_complete(self, key) -> None:
        if not self._broods[key].waiting:
            self._finished[key] = self._broods.pop(key).outcome()


def pick(queued_tasks: list[str], actor: int, homes: dict[str, set[int]]) -> int:
    """Returns the queue position `actor` takes: the first candidate of a task it has scored,
    else the first of a task no actor has scored, else the head (no actor waits idle)."""
    mine = (at for at, task in enumerate(queued_tasks) if actor in homes.get(task, ()))
    new = (at for at, task in enumerate(queued_tasks) if task not in homes)
    return next(mine, next(new, 0))


def ready(refs: list) -> list:
    """Returns the refs that are done, waiting at most POLL_S for the first one."""
    if not refs:
        return []
    done, rest = ray.wait(refs, num_returns=1, timeout=POLL_S)
    if done and rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
        done += more
    return done
