"""The checkpoint: everything a killed campaign needs to continue exactly where it stopped.

Written atomically after every generation, after that generation's Parquet parts, so a
kill at any moment leaves either the previous checkpoint (the generation is redone, with
the same RNG states, hence the same candidates) or the new one. Pickle is fine here: the
file is the engine's own, written and read by the same trusted code.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

from evo.budget import Spend
from evo.records import Evaluation
from evo.results import atomic_write

FORMAT_VERSION = 1
"""Bumped when the checkpoint's layout changes; an older checkpoint is refused, not misread."""


@dataclasses.dataclass(frozen=True)
class CampaignState:
    """A campaign between generations.

    Attributes:
      generation_done: last generation whose rows are written and islands replaced (-1:
        nothing yet; 0: the seed population is scored).
      islands: (task, island) -> `Population.state()`.
      scored: (task, candidate id) -> Evaluation; a candidate seen again is not re-scored.
      spend: USD, tokens, GPU seconds and wall seconds used so far.
      candidates: candidates the engine handled (offspring and seeds), for the overhead figure.
      engine_overhead_s: wall time not spent waiting on fitness or LLM calls.
    """

    generation_done: int = -1
    islands: dict = dataclasses.field(default_factory=dict)
    scored: dict[tuple[str, str], Evaluation] = dataclasses.field(default_factory=dict)
    spend: Spend = Spend()
    candidates: int = 0
    engine_overhead_s: float = 0.0


def path(folder: Path) -> Path:
    return folder / "checkpoint" / "state.pkl"


def save(folder: Path, state: CampaignState) -> None:
    """Replaces the checkpoint with `state`, atomically."""
    payload = pickle.dumps({"format": FORMAT_VERSION, "state": state},
                           protocol=pickle.HIGHEST_PROTOCOL)
    atomic_write(path(folder), lambda tmp: tmp.write_bytes(payload))


def load(folder: Path) -> CampaignState | None:
    """Returns the saved state, or None if the folder has no checkpoint yet."""
    file = path(folder)
    if not file.exists():
        return None
    payload = pickle.loads(file.read_bytes())
    if payload.get("format") != FORMAT_VERSION:
        raise ValueError(f"{file}: checkpoint format {payload.get('format')} is not "
                         f"{FORMAT_VERSION}; it was written by another version of KernelEvo")
    return payload["state"]
