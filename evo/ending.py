"""How a campaign's run ended: the Summary `evo run` prints, and the "stop" campaign.json keeps.

The terminal scrolls away, and a campaign stopped by its LLM calls, a budget cap, a signal or
a fatal cause may hold no evaluation at all: its folder must still say what happened.
`record` sets campaign.json's "stop" (a resumed run replaces it when it ends):

    {"stopped_by": a budget cap, "llm_failures", a signal's name, "fatal", or null (it ran
                   every generation),
     "reason": one sentence, "details": lines under it, "at": when (UTC, ISO 8601)}

A run killed outright, or ended by a bug, records nothing: the report says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
from pathlib import Path
from typing import Sequence

import pyarrow.dataset as ds

from evo import breaker, results
from evo.breaker import Trip
from evo.budget import Spend
from evo.checkpoint import CampaignState
from evo.config import Config
from evo.progress import LLMTally, RowCounts, time_name

FATAL = "fatal"
"""campaign.json's "stop"."stopped_by" of a run ended by a fatal cause the user can fix."""


@dataclasses.dataclass(frozen=True)
class Summary:
    """What `run_campaign` returns; `text()` is what `evo run` prints.

    Attributes:
      generations_done, furthest_generation: last generation every island, and some island,
        completed (0: only the seeds were scored).
      stopped_by: a budget cap ("max_usd", ...) or `breaker.STOPPED_BY` (its LLM calls kept
        failing; `trip` says how) that stopped the run early; None if it ran all generations.
      llm: the campaign's LLM calls (all runs of it), failed ones by kind.
      backend: where fitness ran (cuda | rocm | interpreter), for the name of its seconds.
      wall_s: this run's wall time, Ray start-up and worker cold starts included.
      candidates: candidates handled over the whole campaign (offspring and seeds).
      engine_overhead_ms_per_candidate: wall time not spent waiting on fitness or LLM
        calls, per candidate.
    """

    out: Path
    generations_done: int
    furthest_generation: int
    stopped_by: str | None
    trip: Trip | None
    tasks: dict[str, RowCounts]
    llm: LLMTally
    spend: Spend
    backend: str
    wall_s: float
    candidates: int
    engine_overhead_ms_per_candidate: float

    @property
    def failed(self) -> bool:
        """True when the campaign was stopped because its LLM calls kept failing."""
        return self.stopped_by == breaker.STOPPED_BY

    def ending(self) -> str:
        """Returns how the run ended: "stopped after generation 2 because ...", "completed ..."."""
        done = f"after generation {self.generations_done}"
        if self.failed:
            return f"stopped {done} because its LLM calls keep failing"
        if self.stopped_by:
            return f"stopped by the {self.stopped_by} cap {done}"
        return f"completed {done}"

    def text(self, resume_command: str | None = None) -> str:
        """Returns the summary as the lines `evo run` prints; a stopped campaign's end with
        `resume_command` (the `evo run ... --resume` that continues it), if given."""
        lines = [f"campaign {self.ending()}: {self.out}"]
        if self.furthest_generation > self.generations_done:
            lines.append(f"  islands stand between generation {self.generations_done} and "
                         f"{self.furthest_generation}")
        lines += [f"  {line}" for line in (self.trip.lines() if self.failed else [])]
        for name, counts in self.tasks.items():
            lines.append(f"  {name}: {counts.text()}")
        if self.llm.calls:
            lines.append(f"  LLM: {self.llm.text()}")
        if self.llm.last_error and not self.failed:
            lines.append(f"  last LLM failure: {self.llm.last_error}")
        spend = self.spend
        lines.append(f"  spend: ${spend.usd:.4f}, {spend.tokens} tokens, {spend.gpu_seconds:.1f} s "
                     f"of {time_name(self.backend)} time, {spend.wall_seconds:.1f} s of "
                     f"campaign time")
        lines.append(f"  wall time {self.wall_s:.1f} s (Ray start-up included); engine overhead "
                     f"{self.engine_overhead_ms_per_candidate:.1f} ms per candidate "
                     f"over {self.candidates} candidates")
        if self.stopped_by and resume_command:
            fix = "fix the endpoint, then " if self.failed else "raise the cap, then "
            lines.append(f"  {fix}continue with: {resume_command}")
        return "\n".join(lines)


def summarize(config: Config, out: Path, state: CampaignState, stopped_by: str | None,
              trip: Trip | None, backend: str, wall_s: float) -> Summary:
    """Returns the Summary of the campaign in `out`, read back from its Parquet rows."""
    tasks = {name: RowCounts() for name in config.campaign.tasks}
    for row in _rows(out / "evaluations", results.EVALUATION_SCHEMA,
                     ["task", "correct", "speedup", "latency_us", "timing_meaningful", "reused"]):
        tasks.setdefault(row["task"], RowCounts()).add([row])
    llm = LLMTally()
    llm.add(_rows(out / "llm_calls", results.LLM_CALL_SCHEMA,
                  ["failure_kind", "error", "finished_at"]))
    overhead_ms = 1000.0 * state.engine_overhead_s / max(state.candidates, 1)
    return Summary(out, state.generation_done, state.furthest_generation, stopped_by, trip,
                   tasks, llm, state.spend, backend, wall_s, state.candidates, overhead_ms)


def _rows(folder: Path, schema, columns: list[str]) -> list[dict]:
    """Returns `columns` of every part in `folder` (null where an older part lacks one)."""
    files = sorted(folder.glob("part-*.parquet"))
    if not files:
        return []
    return ds.dataset(files, schema=schema, format="parquet").to_table(columns=columns).to_pylist()


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
