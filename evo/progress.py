"""Progress of a running campaign: a live table per task on a terminal, log lines otherwise.

The driver reports each evaluation as it lands (its fitness time), and the rows of each
generation an island finishes, the seeds' (generation 0) included (islands advance at their
own pace: a task's row shows the range its islands have reached). Counts come from the rows
only: candidates, of which repeats (a verdict reused, not scored again), and correct ones, so
every number shown is a count of rows a reader can find in the results folder. The display
never feeds back into the run, so piping `evo run` to a file changes nothing but the look.
LLM failures are shown beside the spend, so a campaign whose calls fail is seen failing at
its first generation, not in the morning.
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


def time_name(backend: str) -> str:
    """Returns what fitness time is called: "GPU" on CUDA/ROCm, "eval" on the CPU interpreter
    (there is no GPU there, and its time is the interpreter's, not a device's)."""
    return "GPU" if backend in ("cuda", "rocm") else "eval"


def candidates_text(candidates: int, repeats: int, scope: str = "") -> str:
    """Returns "18 candidates{scope}" and, when some are, "(1 a repeat, its verdict reused)":
    every row, then how many of them took an earlier verdict instead of being scored again."""
    head = f"{candidates} candidate{'s' * (candidates != 1)}{scope}"
    if not repeats:
        return head
    which = "1 a repeat, its verdict" if repeats == 1 else f"{repeats} repeats, their verdicts"
    return f"{head} ({which} reused)"


@dataclasses.dataclass
class TaskProgress:
    """Counters shown for one task."""

    generations: dict[int, int] = dataclasses.field(default_factory=dict)  # island -> done
    seed_rows: dict[str, dict] = dataclasses.field(default_factory=dict)  # candidate id -> row
    seeds: str = "-"
    candidates: int = 0  # rows written, seeds included
    repeats: int = 0  # of those, rows whose verdict was reused
    correct: int = 0
    best_speedup: float | None = None
    timing_meaningful: bool = True
    llm: LLMTally = dataclasses.field(default_factory=LLMTally)
    usd: float = 0.0
    eval_seconds: float = 0.0

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

    `backend` (cuda | rocm | interpreter) names fitness time: GPU seconds, or eval seconds
    on the CPU interpreter. With `sandboxed=False` (`[fitness] sandbox = "off"`) every line
    says so: those verdicts were made on code that could reach the judge.
    """

    def __init__(self, tasks: list[str], generations: int, backend: str,
                 stream: TextIO | None = None, sandboxed: bool = True, islands: int = 1):
        self.stream = stream or sys.stdout
        self._mark = "" if sandboxed else " [UNSANDBOXED]"
        self.generations = generations
        self.islands = islands
        self.time_name = time_name(backend)
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
        """Books the fitness time of one candidate of `task` scored on the fitness actors."""
        self.tasks[task].eval_seconds += (evaluation.compile_s + evaluation.check_s
                                            + evaluation.bench_s)
        self._refresh()

    def seeds_scored(self, key: tuple[str, int], rows: list[dict]) -> None:
        """Books one island's rows of generation 0 (its seed kernels); once every island of
        the task has them, shows the task's generation 0 (a kernel seeded on several
        islands named once)."""
        task, island = key
        shown = self.tasks[task]
        _book(shown, rows)
        shown.seed_rows.update((row["candidate_id"], row) for row in rows)
        shown.generations[island] = 0
        if len(shown.generations) == self.islands:
            shown.seeds = _seeds_text(list(shown.seed_rows.values()))
            self._print(f"gen 0/{self.generations} {task}: {shown.seeds}, "
                        f"{self.time_name} time {shown.eval_seconds:.1f} s")
        self._refresh()

    def island_done(self, key: tuple[str, int], generation: int, rows: list[dict],
                    llm_calls: list[dict]) -> None:
        """Books one island's finished `generation`: its rows and its LLM call rows; shows
        its task's counters over all its islands (naming the island that finished)."""
        task, island = key
        shown = self.tasks[task]
        _book(shown, rows)
        shown.llm.add(llm_calls)
        shown.usd += sum(call.get("cost_usd") or 0.0 for call in llm_calls)
        shown.generations[island] = generation
        self._waits = []
        where = f" island {island}" if self.islands > 1 else ""
        scope = " so far" + (f" on its {self.islands} islands" if self.islands > 1 else "")
        failure = f"; last LLM failure: {shown.llm.last_error}" if shown.llm.last_error else ""
        self._print(f"gen {generation}/{self.generations} {task}{where}: "
                    f"{candidates_text(shown.candidates, shown.repeats, scope)}, "
                    f"{shown.correct} correct, best speedup {shown.speedup_text()}, "
                    f"LLM {shown.llm.text()} ${shown.usd:.4f}, "
                    f"{self.time_name} time {shown.eval_seconds:.1f} s{failure}")
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
        for column in ("task", "gen", "seeds", "candidates", "repeats", "correct", "best", "LLM",
                       "failed", "USD", f"{self.time_name} s"):
            table.add_column(column, justify="left" if column in ("task", "seeds") else "right",
                             no_wrap=True)
        for name, shown in self.tasks.items():
            table.add_row(name, f"{shown.generation_text()}/{self.generations}", shown.seeds,
                          str(shown.candidates), str(shown.repeats), str(shown.correct),
                          shown.speedup_text("*"), str(shown.llm.calls),
                          str(sum(shown.llm.failed.values())), f"{shown.usd:.2f}",
                          f"{shown.eval_seconds:.0f}")
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


def _book(shown: TaskProgress, rows: list[dict]) -> None:
    """Counts `rows` (evaluations rows) in a task's counters and keeps its best speedup."""
    for row in rows:
        shown.candidates += 1
        shown.repeats += bool(row["reused"])
        if row["correct"]:
            shown.correct += 1
            shown.timing_meaningful = row["timing_meaningful"]
            speedup = speedup_if_fully_timed(True, row["speedup"], row.get("latency_us"))
            if speedup is not None and (shown.best_speedup is None
                                        or speedup > shown.best_speedup):
                shown.best_speedup = speedup


def _seeds_text(rows: list[dict]) -> str:
    """Returns "seed kernel correct", "seed kernel failed (mismatch)", "2 seed kernels: 1
    correct, ..." or "no seed kernel ..." from the seeds' rows (one per distinct kernel)."""
    if not rows:
        return "no seed kernel (the generator writes the first ones)"
    failed = sorted({row["failure_kind"] or "failed" for row in rows if not row["correct"]})
    correct = sum(bool(row["correct"]) for row in rows)
    if len(rows) == 1:
        return "seed kernel correct" if correct else f"seed kernel failed ({failed[0]})"
    why = f" ({', '.join(failed)})" if failed else ""
    return f"{len(rows)} seed kernels: {correct} correct, {len(rows) - correct} failed{why}"
