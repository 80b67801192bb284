"""Counting LLM calls and why they failed, as progress lines, the summary and the breaker show it.

A call row (`llm_calls/`) failed when its `failure_kind` is set: a `call_failures` kind for a
call that got no answer, or the parser's word for an answer without usable code.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
from typing import Iterable

_NEVER = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)


def in_order(rows: Iterable[dict]) -> list[dict]:
    """Returns call rows in the order they finished (rows from before that was recorded first)."""
    return sorted(rows, key=lambda row: row.get("finished_at") or _NEVER)


def kinds_text(kinds: collections.Counter) -> str:
    """Returns "connection_refused 6, no_code_block 2": the commonest kind first."""
    return ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())


@dataclasses.dataclass
class LLMTally:
    """Calls seen so far, failed calls by kind, and the last failure's words."""

    calls: int = 0
    failed: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    last_error: str = ""

    def add(self, rows: Iterable[dict]) -> None:
        for row in in_order(rows):
            self.calls += 1
            if row.get("failure_kind"):
                self.failed[row["failure_kind"]] += 1
                self.last_error = row.get("error") or row["failure_kind"]

    def text(self) -> str:
        """Returns "6 calls, 6 failed (connection_refused 6)" or "6 calls"."""
        failed = sum(self.failed.values())
        if not failed:
            return f"{self.calls} calls"
        return f"{self.calls} calls, {failed} failed ({kinds_text(self.failed)})"
