"""Progress of a running campaign: a live table per task on a terminal, log lines otherwise.

The driver reports each evaluation as it lands and each finished generation; the display
never feeds back into the run, so piping `evo run` to a file changes nothing but the look.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from evo.records import Evaluation


@dataclasses.dataclass
class TaskProgress:
    """Counters shown for one task."""

    generation: int = 0
    scored: int = 0
    evaluations: int = 0
    correct: int = 0
    best_speedup: float | None = None
    timing_meaningful: bool = True
    llm_calls: int = 0
    usd: float = 0.0
    gpu_seconds: float = 0.0

    def speedup_text(self, interpreted_mark: str = " (interpreter)") -> str:
        if self.best_speedup is None:
            return "-"
        suffix = "" if self.timing_meaningful else interpreted_mark
        return f"{self.best_speedup:.2f}x{suffix}"


class Progress:
    """Shows per-task counters; use as a context manager around the generation loop."""

    def __init__(self, tasks: list[str], generations: int, stream: TextIO | None = None):
        self.stream = stream or sys.stdout
        self.generations = generations
        self.tasks = {name: TaskProgress() for name in tasks}
        self._live = None
        self._started = time.monotonic()

    def __enter__(self) -> "Progress":
        if self.stream.isatty():
            self._live = Live(self._table(), console=Console(file=self.stream),
                              refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.__exit__(*exc)

    def evaluated(self, task: str, evaluation: Evaluation) -> None:
        """Counts one candidate of `task` scored on the fitness actors (reuses not counted)."""
        shown = self.tasks[task]
        shown.scored += 1
        shown.gpu_seconds += evaluation.compile_s + evaluation.check_s + evaluation.bench_s
        if self._live is not None:
            self._live.update(self._table())

    def generation_done(self, generation: int, rows: list[dict],
                        llm_calls: dict[str, list[dict]]) -> None:
        """Marks `generation` finished for every task and books its rows and LLM calls."""
        for row in rows:
            shown = self.tasks[row["task"]]
            shown.evaluations += 1
            if row["correct"]:
                shown.correct += 1
                shown.timing_meaningful = row["timing_meaningful"]
                speedup = row["speedup"]
                if speedup is not None and (shown.best_speedup is None
                                            or speedup > shown.best_speedup):
                    shown.best_speedup = speedup
        for name, shown in self.tasks.items():
            calls = llm_calls.get(name, [])
            shown.generation = generation
            shown.llm_calls += len(calls)
            shown.usd += sum(call.get("cost_usd") or 0.0 for call in calls)
            if self._live is None:
                print(self._line(name, shown), file=self.stream, flush=True)
        if self._live is not None:
            self._live.update(self._table())

    def _line(self, name: str, shown: TaskProgress) -> str:
        elapsed_s = time.monotonic() - self._started
        return (f"[{elapsed_s:7.1f} s] gen {shown.generation}/{self.generations} {name}: "
                f"{shown.evaluations} offspring ({shown.scored} scored), {shown.correct} correct, "
                f"best speedup {shown.speedup_text()}, LLM {shown.llm_calls} calls "
                f"${shown.usd:.4f}, GPU {shown.gpu_seconds:.1f} s")

    def _table(self) -> Table:
        interpreted = any(not shown.timing_meaningful for shown in self.tasks.values())
        table = Table(title=f"KernelEvo ({time.monotonic() - self._started:.0f} s)",
                      caption="*: interpreter latency, not meaningful"
                      if interpreted else None)
        for column in ("task", "gen", "scored", "offspring", "correct", "best", "LLM", "USD",
                       "GPU s"):
            table.add_column(column, justify="left" if column == "task" else "right",
                             no_wrap=True)
        for name, shown in self.tasks.items():
            table.add_row(name, f"{shown.generation}/{self.generations}", str(shown.scored),
                          str(shown.evaluations), str(shown.correct), shown.speedup_text("*"),
                          str(shown.llm_calls), f"{shown.usd:.2f}", f"{shown.gpu_seconds:.0f}")
        return table
