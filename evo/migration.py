"""Migration between the islands of one task: the best of each island go to the next (ring).

`migration_interval = 0` never migrates: the islands are GEAK's independent parallel runs.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

import ray

T = TypeVar("T")


def due(generation: int, interval: int) -> bool:
    """Returns True when the islands migrate after `generation`."""
    return interval > 0 and generation > 0 and generation % interval == 0


def ring(emigrants: Sequence[Sequence[T]]) -> list[list[T]]:
    """Returns what each island receives: island i gets island i-1's emigrants (a ring)."""
    count = len(emigrants)
    return [list(emigrants[(island - 1) % count]) for island in range(count)]


def migrate(islands: Sequence["ray.actor.ActorHandle"], migrants: int, timeout_s: float) -> None:
    """Moves each island's `migrants` best individuals to the next island of the ring."""
    if len(islands) < 2:
        return
    emigrants = ray.get([island.best.remote(migrants) for island in islands], timeout=timeout_s)
    ray.get([island.receive.remote(arrivals) for island, arrivals in zip(islands, ring(emigrants))],
            timeout=timeout_s)
