"""What an evaluation under way is doing: its stage and the request it is waiting on.

A campaign whose island has waited minutes on one candidate asks its FitnessActors
(`Evaluator.in_progress`) and says why, instead of going quiet: a Triton compile of a
kernel whose accumulator spills can keep ptxas busy for minutes (evidence:
RESULTS.md#slow-compile), which looks like a hang from outside. Only the judge's side writes it, so it is no candidate's report about itself.
"""

from __future__ import annotations

import dataclasses
import time


@dataclasses.dataclass
class Activity:
    """One evaluation's live state; the walk writes it, `snapshot` reads it from another
    thread (the request is one tuple replaced whole, so a snapshot never pairs a request
    with another's start)."""

    task: str
    candidate_id: str
    started: float = dataclasses.field(default_factory=time.monotonic)
    stage: str | None = None  # a walk's stage (`evo.records.STAGES`); None: not begun
    request: tuple[str, float, float] | None = None  # ("role.op", sent at, limit s) waited on

    def waiting_on(self, request: str | None, limit_s: float = 0.0) -> None:
        """Notes the request sent now, e.g. "candidate.precompile" (None: answered)."""
        self.request = None if request is None else (request, time.monotonic(), limit_s)

    def snapshot(self, now: float) -> dict:
        """Returns what the evaluation is doing, as plain values: task, candidate_id,
        for_s (since it began), stage, request, request_s and limit_s (None between
        requests: waiting for a worker, a checker or the device)."""
        request, sent, limit_s = self.request or (None, None, None)
        return {"task": self.task, "candidate_id": self.candidate_id,
                "for_s": now - self.started, "stage": self.stage, "request": request,
                "request_s": None if sent is None else now - sent, "limit_s": limit_s}
