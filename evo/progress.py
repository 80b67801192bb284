"""Progress of a running campaign: a live table per task on a terminal, log lines otherwise.

The driver reports each evaluation as it lands, the seeds' verdicts (generation 0) and each
generation an island finishes (islands advance at their own pace: a task's row shows the
range its islands have reached); the display never feeds back into the run, so piping `evo run` to a
file changes nothing but the look. LLM failures are shown beside the spend, so a campaign
whose calls fail is seen failing at its first generation, not in the morning.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from evo.llm_tally import LLMTally
from evo.records import Evaluation, speedup_if_fully_timed


WAITS_SHOWN = 5
"""How many evaluations a `waiting` note names, longest out first."""


def device_label(backend: str) -> str:
    """Returns what fitness time is called: "GPU" on CUDA/ROCm, "device" on the CPU interpreter
    (where there is no GPU to speak of)."""
    return "GPU" if backend in ("cuda", "rocm") else "device"


@dataclasses.dataclass
class TaskProgress:
    """Counters shown for one task."""

    generations: dict[int, int] = dataclasses.field(default_factory=dict)  # island -> done
    seed_verdicts: dict[str, Evaluation] = dataclasses.field(default_factory=dict)
    seeds: str = "-"
    scored: int = 0
    evaluations: int = 0
    correct: int = 0
    best_speedup: float | None = None
    timing_meaningful: bool = True
    llm: LLMTally = dataclasses.field(default_factory=LLMTally)
    usd: float = 0.0
    device_seconds: float = 0.0

    def speedup_text(self, interpreted_mark: str = " (interpreter)") -> str:
        if self.best_speedup is None:
            return "-"
        suffix = "" if self.timing_meaningful else interpreted_mark
        return f"{self.best_speedup:.2f}x{suffix}"

    def generation_text(self) -> str:
        """Returns the generations its islands finished: "3", or "2-4" while they differ."""
        low, high = min(self.generations.values(), default=0), max(self.generations.values(),
                                                                   default=0)
        return str(low) if low == high else f"{low}-{high}"


class Progress:
    """Shows per-task counters; use as a context manager around the generation loop.

    `islands`: islands per task (a task's seeds are shown once all of its islands scored theirs).

    `backend` (cuda | rocm | interpreter) names fitness time: GPU seconds, or device seconds
    on the CPU interpreter. With `sandboxed=False` (`[fitness] sandbox = "off"`) every line
    says so: those verdicts were made on code that could reach the judge.
    """

    def __init__(self, tasks: list[str], generations: int, backend: str,
                 stream: TextIO | None = None, sandboxed: bool = True, islands: int = 1):
        self.stream = stream or sys.stdout
        self._mark = "" if sandboxed else " [UNSANDBOXED]"
        self.generations = generations
        self.islands = islands
        self.device = device_label(backend)
        self.tasks = {name: TaskProgress() for name in tasks}
        self._live = None
        self._started = time.monotonic()
        self._waits: list[str] = []  # `waiting`'s lines, shown under the table

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
        shown.device_seconds += evaluation.compile_s + evaluation.check_s + evaluation.bench_s
        self._refresh()

    def seeds_scored(self, key: tuple[str, int], scored: list) -> None:
        """Books one island's verdicts on its seed kernels (`scoring.Scored`); once every
        island of the task has them, shows the task's generation 0 (a kernel seeded on
        several islands shown once)."""
        task, island = key
        shown = self.tasks[task]
        shown.seed_verdicts.update((s.candidate.id, s.evaluation) for s in scored)
        shown.generations[island] = 0
        if len(shown.generations) == self.islands:
            shown.seeds = _seeds_text(list(shown.seed_verdicts.values()))
            self._print(f"gen 0/{self.generations} {task}: {shown.seeds}, "
                        f"{self.device} time {shown.device_seconds:.1f} s")
        self._refresh()

    def island_done(self, key: tuple[str, int], generation: int, rows: list[dict],
                    llm_calls: list[dict]) -> None:
        """Books one island's finished `generation`: its rows and its LLM call rows; shows
        its task's counters (naming the island when the task has several)."""
        task, island = key
        shown = self.tasks[task]
        for row in rows:
            shown.evaluations += 1
            if row["correct"]:
                shown.correct += 1
                shown.timing_meaningful = row["timing_meaningful"]
                speedup = speedup_if_fully_timed(True, row["speedup"], row.get("latency_us"))
                if speedup is not None and (shown.best_speedup is None
                                            or speedup > shown.best_speedup):
                    shown.best_speedup = speedup
        shown.llm.add(llm_calls)
        shown.usd += sum(call.get("cost_usd") or 0.0 for call in llm_calls)
        shown.generations[island] = generation
        self._waits = []
        where = f" island {island}" if self.islands > 1 else ""
        failure = f"; last LLM failure: {shown.llm.last_error}" if shown.llm.last_error else ""
        so_far = " (task so far)" if self.islands > 1 else " so far"
        self._print(f"gen {generation}/{self.generations} {task}{where}: {shown.evaluations} "
                    f"offspring{so_far} ({shown.scored} scored), {shown.correct} correct, best "
                    f"speedup {shown.speedup_text()}, LLM {shown.llm.text()} "
                    f"${shown.usd:.4f}, {self.device} time {shown.device_seconds:.1f} s"
                    f"{failure}")
        self._refresh()

    def waiting(self, lingering: list[tuple]) -> None:
        """Shows what the islands are waiting on: one line per evaluation out long, given as
        (island key, generation, candidate id, seconds out, its actor's `in_progress` entry
        or None), longest first; the `WAITS_SHOWN` longest, then how many more. On a terminal
        they stand under the table until an island moves on."""
        self._waits = [_wait_text(*entry) for entry in lingering[:WAITS_SHOWN]]
        if len(lingering) > WAITS_SHOWN:
            self._waits.append(f"waiting: {len(lingering) - WAITS_SHOWN} more evaluations out "
                               f"longer than the note's threshold")
        for line in self._waits:
            self._print(line)
        self._refresh()

    def _print(self, line: str) -> None:
        if self._live is None:
            elapsed_s = time.monotonic() - self._started
            print(f"[{elapsed_s:7.1f} s] {line}{self._mark}", file=self.stream, flush=True)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._table())

    def _table(self) -> Table:
        interpreted = any(not shown.timing_meaningful for shown in self.tasks.values())
        failing = [(name, shown.llm.last_error) for name, shown in self.tasks.items()
                   if shown.llm.last_error]
        notes = (["*: interpreter latency, not meaningful"] if interpreted else []) + [
            f"last LLM failure ({name}): {error}" for name, error in failing] + self._waits
        table = Table(title=f"KernelEvo ({time.monotonic() - self._started:.0f} s)",
                      caption="\n".join(notes) or None)
        for column in ("task", "gen", "seeds", "scored", "offspring", "correct", "best", "LLM",
                       "failed", "USD", f"{self.device} s"):
            table.add_column(column, justify="left" if column in ("task", "seeds") else "right",
                             no_wrap=True)
        for name, shown in self.tasks.items():
            table.add_row(name, f"{shown.generation_text()}/{self.generations}", shown.seeds,
                          str(shown.scored), str(shown.evaluations), str(shown.correct),
                          shown.speedup_text("*"), str(shown.llm.calls),
                          str(sum(shown.llm.failed.values())), f"{shown.usd:.2f}",
                          f"{shown.device_seconds:.0f}")
        return table


def _wait_text(key, generation: int, candidate_id: str, out_s: float,
               doing: dict | None) -> str:
    """Returns "waiting: row_sum island 1 gen 4, candidate 3f2a9c1b out 95 s: run,
    candidate.precompile 93 s of its 180 s limit" (key: (task, island), or a task's name
    while its seeds are scored)."""
    where = f"{key} seeds" if isinstance(key, str) else f"{key[0]} island {key[1]} gen {generation}"
    head = f"waiting: {where}, candidate {candidate_id[:8]} out {out_s:.0f} s"
    if doing is None:
        return f"{head} (queued on its actor, or the actor did not say)"
    if doing["stage"] is None:
        return f"{head}: in its external harness"
    if doing["request"] is None:
        return f"{head}: {doing['stage']}, between requests (waiting for a worker or the device)"
    return (f"{head}: {doing['stage']}, {doing['request']} {doing['request_s']:.0f} s of its "
            f"{doing['limit_s']:.0f} s limit")


def _seeds_text(evaluations: list[Evaluation]) -> str:
    """Returns "seed correct", "seed failed (mismatch)", "2 seeds: 1 correct, ..." or "no seeds"."""
    if not evaluations:
        return "no seed kernel (the generator writes the first ones)"
    failed = sorted({ev.failure_kind or "failed" for ev in evaluations if not ev.correct})
    correct = sum(ev.correct for ev in evaluations)
    if len(evaluations) == 1:
        return "seed kernel correct" if correct else f"seed kernel failed ({failed[0]})"
    why = f" ({', '.join(failed)})" if failed else ""
    return (f"{len(evaluations)} seed kernels: {correct} correct, "
            f"{len(evaluations) - correct} failed{why}")
