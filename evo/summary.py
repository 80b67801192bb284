"""The end-of-run summary: what was found, what it cost, what stopped it, and engine overhead."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.dataset as ds

from evo.budget import Spend
from evo.checkpoint import CampaignState
from evo.config import Config


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """One task's outcome over all islands and generations."""

    evaluations: int
    correct: int
    best_speedup: float | None
    timing_meaningful: bool


@dataclasses.dataclass(frozen=True)
class Summary:
    """What `run_campaign` returns.

    Attributes:
      generations_done: last generation completed (0: only the seeds were scored).
      stopped_by: the budget cap that stopped the run ("max_usd", "max_tokens",
        "max_gpu_seconds", "max_wall_seconds"), None if it ran all generations.
      wall_s: this run's wall time, Ray start-up and worker cold starts included.
      candidates: candidates handled over the whole campaign (offspring and seeds).
      engine_overhead_ms_per_candidate: wall time not spent waiting on fitness or LLM
        calls, per candidate.
    """

    out: Path
    generations_done: int
    stopped_by: str | None
    tasks: dict[str, TaskResult]
    spend: Spend
    wall_s: float
    candidates: int
    engine_overhead_ms_per_candidate: float

    def text(self) -> str:
        """Returns the summary as the lines `evo run` prints."""
        reason = f"stopped by the {self.stopped_by} cap" if self.stopped_by else "completed"
        lines = [f"campaign {reason} after generation {self.generations_done}: {self.out}"]
        for name, result in self.tasks.items():
            best = "-" if result.best_speedup is None else f"{result.best_speedup:.2f}x"
            if result.best_speedup is not None and not result.timing_meaningful:
                best += " (interpreter: latency not meaningful)"
            lines.append(f"  {name}: {result.evaluations} evaluated, {result.correct} correct, "
                         f"best speedup {best}")
        spend = self.spend
        lines.append(f"  spend: ${spend.usd:.4f}, {spend.tokens} tokens, "
                     f"{spend.gpu_seconds:.1f} GPU s, {spend.wall_seconds:.1f} s of campaign time")
        lines.append(f"  wall time {self.wall_s:.1f} s (Ray start-up included); engine overhead "
                     f"{self.engine_overhead_ms_per_candidate:.1f} ms per candidate "
                     f"over {self.candidates} candidates")
        return "\n".join(lines)


def summarize(config: Config, out: Path, state: CampaignState, stopped_by: str | None,
              wall_s: float) -> Summary:
    """Returns the Summary of the campaign in `out`, read back from its Parquet rows."""
    tasks = {name: TaskResult(0, 0, None, True) for name in config.campaign.tasks}
    files = sorted((out / "evaluations").glob("part-*.parquet"))
    if files:
        table = ds.dataset(files, format="parquet").to_table(
            columns=["task", "correct", "speedup", "timing_meaningful"])
        for row in table.to_pylist():
            result = tasks.get(row["task"], TaskResult(0, 0, None, True))
            best, meaningful = result.best_speedup, result.timing_meaningful
            if row["correct"] and row["speedup"] is not None:
                best = row["speedup"] if best is None else max(best, row["speedup"])
                meaningful = meaningful and bool(row["timing_meaningful"])
            tasks[row["task"]] = TaskResult(result.evaluations + 1,
                                            result.correct + bool(row["correct"]), best, meaningful)
    overhead_ms = 1000.0 * state.engine_overhead_s / max(state.candidates, 1)
    return Summary(out, state.generation_done, stopped_by, tasks, state.spend, wall_s,
                   state.candidates, overhead_ms)
