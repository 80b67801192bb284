"""The circuit breaker: a campaign whose LLM calls keep giving nothing usable stops and says why.

Without it, a campaign against a dead endpoint, a revoked key or a model that never writes
a code block runs all night and reports "0 evaluated". After each generation the breaker
sees its call rows (`failure_kind`: a `call_failures` kind for a call with no answer, the
parser's word for an answer without usable code) and trips on either of:
  - `operators.max_consecutive_failures` calls in a row, across islands, in the order they
    finished, that gave no usable answer;
  - an island whose whole generation got no usable answer, one at least because the
    endpoint cannot answer (`call_failures.ENDPOINT`); unusable answers alone do not trip
    it, or one answer without a code block would stop a one-offspring island's night.
Transient failures (429, 5xx, timeouts) were retried by the client: they neither count nor
break a run. A resumed campaign counts afresh.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime

from evo.progress import in_order, kinds_text
from operators.call_failures import ENDPOINT, TRANSIENT

STOPPED_BY = "llm_failures"
"""`Summary.stopped_by` of a campaign the breaker stopped."""


@dataclasses.dataclass(frozen=True)
class Trip:
    """Why the breaker stopped the campaign.

    Attributes:
      reason: the rule that tripped, as a sentence.
      since: when the first failed call behind it finished (UTC; None if not recorded).
      since_generation: the generation of that call.
      kinds: failure kind -> failed calls behind the trip.
      last_error: the last of them, as the client or the parser worded it.
    """

    reason: str
    since: datetime.datetime | None
    since_generation: int
    kinds: collections.Counter
    last_error: str

    def lines(self) -> list[str]:
        """Returns the summary's lines about the stop."""
        when = "" if self.since is None else self.since.astimezone().strftime(" %Y-%m-%d %H:%M:%S")
        return [f"why: {self.reason}",
                f"failing since{when} (generation {self.since_generation}): "
                f"{kinds_text(self.kinds)}",
                f"last error: {self.last_error}"]


class Breaker:
    """Watches a campaign's LLM calls, generation by generation."""

    def __init__(self, max_consecutive_failures: int):
        self.limit = max_consecutive_failures
        self._run: list[dict] = []  # failures since the last usable answer, not transient ones

    def observe(self, generation: int, calls: dict[tuple[str, int], list[dict]]) -> Trip | None:
        """Books one generation's call rows ((task, island) -> rows); returns a Trip if it trips."""
        for row in in_order(row for rows in calls.values() for row in rows):
            kind = row.get("failure_kind")
            if row.get("recorded_from"):  # a recorded reply's failure is the model's, not an endpoint's
                continue
            if not kind:
                self._run = []
            elif kind not in TRANSIENT:
                self._run.append({**row, "generation": generation})
        if len(self._run) >= self.limit:
            return _trip(f"{len(self._run)} LLM calls in a row gave no usable answer "
                         f"(operators.max_consecutive_failures = {self.limit})", self._run)
        starved = {key: rows for key, rows in sorted(calls.items()) if _starved(rows)}
        if starved:
            names = ", ".join(f"{task} island {island}" for task, island in starved)
            return _trip(f"the endpoint cannot answer: no usable answer in generation "
                         f"{generation} for {names}",
                         [{**row, "generation": generation} for rows in starved.values()
                          for row in rows])
        return None


def _starved(rows: list[dict]) -> bool:
    """Returns True if an island's calls all failed, one at least because of the endpoint."""
    kinds = [row.get("failure_kind") for row in rows]
    return bool(rows) and all(kinds) and any(kind in ENDPOINT for kind in kinds)


def _trip(reason: str, failed: list[dict]) -> Trip:
    failed = in_order(failed)
    first, last = failed[0], failed[-1]
    return Trip(reason, first.get("finished_at"), first["generation"],
                collections.Counter(row["failure_kind"] for row in failed),
                last.get("error") or last["failure_kind"])
