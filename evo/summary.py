"""The end-of-run summary: what was found, what it cost, what stopped it and how to go on."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.dataset as ds

from evo import breaker, results
from evo.breaker import Trip
from evo.budget import Spend
from evo.checkpoint import CampaignState
from evo.config import Config
from evo.llm_tally import LLMTally
from evo.records import speedup_if_fully_timed
from evo.progress import candidates_text, time_name


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """One task's outcome over all islands and generations, seeds (generation 0) included.

    Attributes:
      candidates: its rows; repeats: those whose verdict was reused, not scored again.
    """

    candidates: int
    repeats: int
    correct: int
    best_speedup: float | None
    timing_meaningful: bool


@dataclasses.dataclass(frozen=True)
class Summary:
    """What `run_campaign` returns.

    Attributes:
      generations_done, furthest_generation: last generation every island, and some island,
        completed (0: only the seeds were scored); islands advance at their own pace.
      stopped_by: what stopped the run before its last generation: a budget cap
        ("max_usd", "max_tokens", "max_gpu_seconds", "max_wall_seconds") or
        `breaker.STOPPED_BY` (its LLM calls kept failing; `trip` says how); None if it ran
        all generations.
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
    tasks: dict[str, TaskResult]
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
        for name, result in self.tasks.items():
            best = "-" if result.best_speedup is None else f"{result.best_speedup:.2f}x"
            if result.best_speedup is not None and not result.timing_meaningful:
                best += " (interpreter: latency not meaningful)"
            lines.append(f"  {name}: {candidates_text(result.candidates, result.repeats)}, "
                         f"{result.correct} correct, best speedup {best}")
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
    tasks = {name: TaskResult(0, 0, 0, None, True) for name in config.campaign.tasks}
    for row in _rows(out / "evaluations", results.EVALUATION_SCHEMA,
                     ["task", "correct", "speedup", "latency_us", "timing_meaningful", "reused"]):
        result = tasks.get(row["task"], TaskResult(0, 0, 0, None, True))
        best, meaningful = result.best_speedup, result.timing_meaningful
        speedup = speedup_if_fully_timed(row["correct"], row["speedup"], row["latency_us"])
        if speedup is not None:
            best = speedup if best is None else max(best, speedup)
            meaningful = meaningful and bool(row["timing_meaningful"])
        tasks[row["task"]] = TaskResult(result.candidates + 1, result.repeats + bool(row["reused"]),
                                        result.correct + bool(row["correct"]), best, meaningful)
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
