"""The FitnessActor: a Ray actor that owns one device (num_gpus=1) and its Evaluator.

Methods are `async`, so many evaluations are in flight at once, each in a thread that drives
one worker process. A thread never outlives its limit: limits are enforced by killing worker
processes, not by abandoning threads. A device that stops answering (or stays busy after a
kernel that never ended) is out: `evaluate` raises DeviceUnresponsive instead of a quick
`harness_error`, so the campaign sends its candidates to the other actors, and
`stats()["device_ok"]` says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from typing import Sequence

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from evo.records import Candidate, Evaluation, Task
from fitness.device import DeviceError, DeviceInfo
from fitness.evaluator import Evaluator
from fitness.processes.pool import DeviceUnresponsive
from fitness.settings import Settings


@dataclasses.dataclass(frozen=True)
class ActorSpec:
    """How to start a FitnessActor like one that ran: the campaign replaces an actor that
    died with `start()`, on the same node while it lives (soft affinity), so a freed GPU is
    taken by its replacement."""

    settings: Settings
    num_gpus: int
    node_id: str

    def start(self):
        """Returns the handle of a new FitnessActor made from this spec."""
        placement = NodeAffinitySchedulingStrategy(self.node_id, soft=True)
        return FitnessActor.options(num_gpus=self.num_gpus, scheduling_strategy=placement).remote(
            self.settings)


class FitnessService:
    """The actor's body; `FitnessActor` is this class under `ray.remote`."""

    def __init__(self, settings: Settings | None = None):
        self._settings = settings = settings or Settings()
        self._evaluator = Evaluator(settings)
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=settings.workers, thread_name_prefix="fitness")
        self._in_flight = 0

    async def evaluate(self, task: Task, candidate: Candidate) -> Evaluation:
        """Returns the candidate's Evaluation; many calls may be awaited concurrently. Raises
        DeviceUnresponsive for a candidate the device's being out left unscored."""
        loop = asyncio.get_running_loop()
        self._in_flight += 1
        try:
            evaluation = await loop.run_in_executor(self._threads, self._evaluator.evaluate,
                                                    task, candidate)
        finally:
            self._in_flight -= 1
        lost = self._evaluator.device_error
        if lost and evaluation.failure_kind == "harness_error":
            raise DeviceUnresponsive(lost)
        return evaluation

    async def evaluate_batch(self, pairs: Sequence[tuple[Task, Candidate]]) -> list[Evaluation]:
        """Returns the Evaluations of (task, candidate) pairs in completion order."""
        pending = [asyncio.ensure_future(self.evaluate(task, candidate)) for task, candidate in pairs]
        return [await finished for finished in asyncio.as_completed(pending)]

    async def stats(self) -> dict:
        """Returns the Evaluator's counters plus `in_flight` (evaluations not yet returned)."""
        return {**self._evaluator.stats(), "in_flight": self._in_flight}

    async def in_progress(self) -> list[dict]:
        """Returns what each evaluation under way is doing (`Evaluator.in_progress`)."""
        return self._evaluator.in_progress()

    async def device(self) -> DeviceInfo:
        return self._evaluator.device

    async def spec(self) -> ActorSpec:
        """Returns how to start an actor like this one (asked while it lives: a dead one
        cannot say)."""
        return ActorSpec(self._settings, num_gpus=len(ray.get_gpu_ids()),
                         node_id=ray.get_runtime_context().get_node_id())

    async def shutdown(self) -> None:
        """Kills the worker processes; call before `ray.kill` so none is left behind."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._evaluator.close()


FitnessActor = ray.remote(FitnessService)


def start_actors(settings: Settings, max_gpus: int | None = None) -> list:
    """Returns one FitnessActor per GPU of the Ray cluster, at most `max_gpus`; each holds
    `num_gpus=1`, so Ray sets its visible device. With no GPU (or device "interpreter") the
    interpreter scores: one actor on each GPU node, the nodes a cluster sets up for scoring (a
    CPU-only head may have no sandbox), or a single one where Ray puts it when none has a GPU.
    """
    settings = settings.scoring()
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if settings.device == "interpreter" or gpus == 0:
        if settings.device in ("cuda", "rocm"):
            raise DeviceError(f"device {settings.device!r} requested but the Ray cluster has no GPU")
        interpreter = settings.model_copy(update={"device": "interpreter"})
        return [FitnessActor.options(num_gpus=0, scheduling_strategy=placement).remote(interpreter)
                for placement in _gpu_node_placements() or ["DEFAULT"]]
    return [FitnessActor.options(num_gpus=1).remote(settings)
            for _ in range(gpus if max_gpus is None else min(gpus, max_gpus))]


def _gpu_node_placements() -> list[NodeAffinitySchedulingStrategy]:
    """Returns a placement pinned to each live node that has a GPU (none on a CPU-only cluster)."""
    return [NodeAffinitySchedulingStrategy(node["NodeID"], soft=False) for node in ray.nodes()
            if node["Alive"] and node["Resources"].get("GPU", 0) > 0]
