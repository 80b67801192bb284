"""Recorded LLM calls, looked up by request hash or by position: what `mode = "replay"` answers from.

A campaign's `llm_calls/*.parquet` rows carry each request's hash and the response text,
so re-running the campaign (for instance on other hardware) needs no endpoint at all.
Identical requests (same hash) recorded several times are answered in recorded order.

Reflector and optimizer prompts carry measured values (latencies, speedups, mismatch
numbers) that differ on other hardware and even between runs, so their hashes rarely
recur. The "position" policy answers such a request by where it was made instead: the
same (task, island, generation, role, sample_index) gets the same recorded answer.
Each row is used once, whichever policy took it.
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib
from typing import Iterable, Mapping

REQUIRED_COLUMNS = ("request_hash", "role", "response", "success")
POSITION_COLUMNS = ("task", "island", "generation", "sample_index")
MATCHES = ("exact", "position")
"""Replay policies: "exact" answers by request hash only; "position" falls back to the call's place."""


class ReplayMissError(LookupError):
    """A request has no recorded answer left; the message names its hash, role and position."""


@dataclasses.dataclass(frozen=True)
class Position:
    """Where in a campaign a call is made; with its role and sample index, its recorded place."""

    task: str
    island: int
    generation: int

    def describe(self, sample_index: int) -> str:
        return (f"task {self.task}, island {self.island}, generation {self.generation}, "
                f"sample {sample_index}")


class Recording:
    """Recorded call rows indexed by request hash and by position, each row consumed once.

    Rows without the position columns (task, island, generation, sample_index), such as a
    client's own call log, can only be matched exactly; `has_positions` says whether all can.
    """

    def __init__(self, rows: Iterable[Mapping]):
        self._rows: list[dict] = []
        self._by_hash: dict[str, list[int]] = collections.defaultdict(list)
        self._by_place: dict[tuple, list[int]] = collections.defaultdict(list)
        self._used: set[int] = set()
        self.source = "rows"
        self.has_positions = True
        for index, row in enumerate(rows):
            missing = [c for c in REQUIRED_COLUMNS if c not in row]
            if missing:
                raise ValueError(f"recorded LLM call row {index} lacks column(s) {missing}; "
                                 f"a row needs {list(REQUIRED_COLUMNS)}")
            self._rows.append(dict(row))
            self._by_hash[row["request_hash"]].append(index)
            place = tuple(row.get(column) for column in POSITION_COLUMNS)
            if None in place:
                self.has_positions = False
            else:
                self._by_place[place].append(index)
        self.size = len(self._rows)

    @classmethod
    def load(cls, path: str | pathlib.Path) -> "Recording":
        """Returns the calls recorded under `path`: a campaign folder (reads its llm_calls/),
        an llm_calls/ folder of Parquet parts (read in name order), or one Parquet file."""
        import pyarrow.parquet as pq

        path = pathlib.Path(path)
        if (path / "llm_calls").is_dir():
            path = path / "llm_calls"
        if path.is_dir():
            files = sorted(path.glob("*.parquet"))
            if not files:
                raise FileNotFoundError(f"no recorded LLM calls: {path} holds no *.parquet file")
        elif path.is_file():
            files = [path]
        else:
            raise FileNotFoundError(f"no recorded LLM calls at {path} (expected a campaign folder, "
                                    f"its llm_calls/ folder or a .parquet file)")
        rows = []
        for file in files:
            rows.extend(pq.read_table(file).to_pylist())
        recording = cls(rows)
        recording.source = str(path)
        return recording

    def take(self, request_hash: str, role: str, sample_index: int = 0,
             position: Position | None = None) -> tuple[dict, str]:
        """Returns (the next unused row for `request_hash`, "exact"), or with a `position`
        (the "position" policy) when the hash is absent, (the next unused `role` row recorded
        at that position, "position"). Raises ReplayMissError when neither has a row left."""
        exact = self._next(self._by_hash.get(request_hash, ()), role=None)
        if exact is not None:
            return exact, "exact"
        if position is None:
            seen = ("was recorded but its recordings are used up" if request_hash in self._by_hash
                    else "was never recorded")
            raise ReplayMissError(f"replay has no answer for the {role} request {request_hash} "
                                  f"(it {seen} in {self.source}); the replayed campaign asked "
                                  f"something the recorded one did not")
        place = (position.task, position.island, position.generation, sample_index)
        placed = self._next(self._by_place.get(place, ()), role)
        if placed is not None:
            return placed, "position"
        recorded = sorted({self._rows[i]["role"] for i in self._by_place.get(place, ())})
        if role in recorded:
            there = f"the {role} answer recorded there is used up"
        elif recorded:
            there = f"only {', '.join(recorded)} calls were recorded there"
        else:
            there = "nothing was recorded there"
        raise ReplayMissError(f"replay has no answer for the {role} request {request_hash} at "
                              f"{position.describe(sample_index)}: no recording has its hash and "
                              f"{there} (in {self.source}); the replayed campaign took another "
                              f"path than the recorded one")

    def _next(self, indexes: Iterable[int], role: str | None) -> dict | None:
        """Marks used and returns the first unused row of `indexes` (of `role`, if given)."""
        for index in indexes:
            if index not in self._used and (role is None or self._rows[index]["role"] == role):
                self._used.add(index)
                return self._rows[index]
        return None
