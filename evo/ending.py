"""How a campaign's last run ended, kept in campaign.json ("stop") for `evo report`.

The end of a run is said once on the terminal, and a terminal scrolls away; a campaign
stopped by its LLM calls, a budget cap, a signal or a fatal cause may hold no evaluation at
all, and its folder must still say what happened. `record` sets campaign.json's "stop":

    {"stopped_by": a budget cap, "llm_failures", a signal's name, "fatal", or null (it ran
                   every generation),
     "reason": one sentence, "details": lines under it, "at": when (UTC, ISO 8601)}

A resumed run replaces it when it ends. A run killed outright, or ended by a bug, records
nothing: the report says so.
"""

from __future__ import annotations

import contextlib
import datetime
from pathlib import Path
from typing import Sequence

from evo import results
from evo.summary import Summary

FATAL = "fatal"
"""campaign.json's "stop"."stopped_by" of a run ended by a fatal cause the user can fix."""


def record(folder: Path, stopped_by: str | None, reason: str,
           details: Sequence[str] = ()) -> None:
    """Sets campaign.json's "stop"; does nothing when there is no campaign.json yet (nothing
    to report on) or it cannot be written (a full disk: the line on stderr still says it)."""
    stop = {"stopped_by": stopped_by, "reason": reason, "details": list(details),
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    with contextlib.suppress(OSError, ValueError):
        results.set_campaign_field(folder, "stop", stop)


def record_summary(folder: Path, summary: Summary) -> None:
    """Records the end of a run that returned its Summary (finished, capped or tripped)."""
    record(folder, summary.stopped_by, summary.ending(),
           summary.trip.lines() if summary.failed else [])
