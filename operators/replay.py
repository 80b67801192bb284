"""Recorded LLM calls, looked up by request hash: what `mode = "replay"` answers from.

A campaign's `llm_calls/*.parquet` rows carry each request's hash and the response text,
so re-running the campaign (for instance on other hardware) needs no endpoint at all.
Identical requests (same hash) recorded several times are answered in recorded order.
"""

from __future__ import annotations

import collections
import pathlib
from typing import Iterable, Mapping

REQUIRED_COLUMNS = ("request_hash", "role", "response", "success")


class ReplayMissError(LookupError):
    """A request has no recorded answer left; the message names its hash and role."""


class Recording:
    """Recorded call rows grouped by request hash, consumed in order."""

    def __init__(self, rows: Iterable[Mapping]):
        self._by_hash: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.source = "rows"
        count = 0
        for row in rows:
            missing = [c for c in REQUIRED_COLUMNS if c not in row]
            if missing:
                raise ValueError(f"recorded LLM call row {count} lacks column(s) {missing}; "
                                 f"a row needs {list(REQUIRED_COLUMNS)}")
            self._by_hash[row["request_hash"]].append(dict(row))
            count += 1
        self.size = count

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

    def take(self, request_hash: str, role: str) -> dict:
        """Returns the next recorded row for `request_hash`; raises ReplayMissError if none is left."""
        queue = self._by_hash.get(request_hash)
        if not queue:
            seen = "was recorded but its recordings are used up" if queue is not None else "was never recorded"
            raise ReplayMissError(f"replay has no answer for the {role} request {request_hash} "
                                  f"(it {seen} in {self.source}); the replayed campaign asked "
                                  f"something the recorded one did not")
        return queue.popleft()
