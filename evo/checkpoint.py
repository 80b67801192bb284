"""The checkpoint: everything a killed campaign needs to continue exactly where it stopped.

Each task's islands are saved together in `checkpoint/tasks/<task>.pkl`, rewritten
atomically after any of them finishes a generation (after that generation's Parquet parts):
one file per task, not per island, because a ring migrates as one step, so a resume never
replays half a migration. A kill leaves each island at its previous generation (redone with
the same RNG state, hence the same candidates) or at the new one. The campaign's counters
(spend, overhead) sit in `checkpoint/state.pkl`, written after every task file. Pickle is
fine: the files are the engine's own, written and read by the same trusted code.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

from evo.budget import Spend
from evo.records import Evaluation
from evo.results import atomic_write, slug

FORMAT_VERSION = 2
"""Bumped when the checkpoint's layout changes; an older checkpoint is refused, not misread."""


@dataclasses.dataclass(frozen=True)
class IslandState:
    """One island between its generations.

    Attributes:
      generation_done: its last generation whose rows are written and population replaced
        (and, at a migration generation, migrated); -1: nothing yet; 0: seeds scored.
      population: `Population.state()` (None before the seeds are scored).
      known: candidate id -> Evaluation the island may reuse instead of scoring again.
    """

    generation_done: int = -1
    population: dict | None = None
    known: dict[str, Evaluation] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class CampaignState:
    """A campaign between island generations.

    Attributes:
      islands: (task, island) -> IslandState.
      spend: USD, tokens, GPU seconds and wall seconds used so far.
      candidates: candidates the engine handled (offspring and seeds), for the overhead figure.
      engine_overhead_s: wall time not spent waiting on fitness or LLM calls.
    """

    islands: dict[tuple[str, int], IslandState] = dataclasses.field(default_factory=dict)
    spend: Spend = Spend()
    candidates: int = 0
    engine_overhead_s: float = 0.0

    @property
    def generation_done(self) -> int:
        """Returns the last generation every island has finished (-1 before any)."""
        return min((island.generation_done for island in self.islands.values()), default=-1)

    @property
    def furthest_generation(self) -> int:
        """Returns the last generation some island has finished (-1 before any)."""
        return max((island.generation_done for island in self.islands.values()), default=-1)


def _state_path(folder: Path) -> Path:
    return folder / "checkpoint" / "state.pkl"


def _task_path(folder: Path, task: str) -> Path:
    return folder / "checkpoint" / "tasks" / f"{slug(task)}.pkl"


def save(folder: Path, state: CampaignState, tasks: set[str]) -> None:
    """Saves the islands of `tasks`, then the campaign's counters, each file atomically."""
    for task in sorted(tasks):
        islands = {key: island for key, island in state.islands.items() if key[0] == task}
        _dump(_task_path(folder, task), {"task": task, "islands": islands})
    _dump(_state_path(folder), {"state": dataclasses.replace(state, islands={})})


def load(folder: Path) -> CampaignState | None:
    """Returns the saved state, or None if the folder has no checkpoint yet."""
    if not _state_path(folder).exists():
        return None
    state = _read(_state_path(folder))["state"]
    islands = {}
    for file in sorted((folder / "checkpoint" / "tasks").glob("*.pkl")):
        islands.update(_read(file)["islands"])
    return dataclasses.replace(state, islands=islands)


def _dump(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = pickle.dumps({"format": FORMAT_VERSION, **payload}, protocol=pickle.HIGHEST_PROTOCOL)
    atomic_write(path, lambda tmp: tmp.write_bytes(data))


def _read(path: Path) -> dict:
    payload = pickle.loads(path.read_bytes())
    if payload.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint format {payload.get('format')} is not "
                         f"{FORMAT_VERSION}; it was written by another version of KernelEvo")
    return payload
