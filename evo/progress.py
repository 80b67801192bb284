"""Progress of a running campaign: a live table per task on a terminal, log lines otherwise.

The driver reports each evaluation as it lands (its fitness time) and the rows of each
generation an island finishes, seeds (generation 0) included; a task's row shows the range
of generations its islands have reached. Every count shown is a count of rows a reader can
find in the results folder (candidates, of which repeats and correct ones), and LLM failures
stand beside the spend, so a campaign whose calls fail is seen failing at its first
generation. The display never feeds back into the run. Its counters (`RowCounts`, `LLMTally`)
count the same rows for the summary (`evo.ending`) and the breaker.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import sys
import time
from typing import Iterable, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from evo.analysis import best
from evo.records import Evaluation, speedup_if_fully_timed

WAITS_SHOWN = 5
"""How many evaluations a `waiting` note names, longest out first."""

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
class RowCounts:
    """A task's evaluation rows counted: every row, the repeats among them (a verdict reused,
    not scored again), the correct ones, and its best named as evo.analysis.best names it:
    the fastest correct speedup timed where timing means something; where none was (Triton's
    CPU interpreter, whose latencies swing 3x between runs of one kernel), no best by speed,
    a ranking by correctness that says why."""

    candidates: int = 0
    repeats: int = 0
    correct: int = 0
    best_speedup: float | None = None  # the fastest correct, fully and meaningfully timed
    correct_with_meaningful_timing: bool = False  # a correct row from a GPU

    def add(self, rows: list[dict]) -> None:
        for row in rows:
            self.candidates += 1
            self.repeats += bool(row["reused"])
            self.correct += bool(row["correct"])
            meaningful = bool(row["correct"]) and bool(row["timing_meaningful"])
            self.correct_with_meaningful_timing |= meaningful
            speedup = speedup_if_fully_timed(row["correct"], row["speedup"], row.get("latency_us"))
            if meaningful and speedup is not None and (self.best_speedup is None
                                                       or speedup > self.best_speedup):
                self.best_speedup = speedup

    def choice(self) -> dict | None:
        """Returns the best as evo.analysis.best.best_candidates describes it (ranked_by,
        ranking, speedup), from these counts; None without a correct row."""
        if not self.correct:
            return None
        if self.best_speedup is not None:
            return {"ranked_by": best.BY_SPEEDUP, "ranking": "", "speedup": self.best_speedup}
        ranking = best.UNTIMED_NOTE if self.correct_with_meaningful_timing else best.INTERPRETER_NOTE
        return {"ranked_by": best.BY_CORRECTNESS, "ranking": ranking, "speedup": None}

    def speedup_text(self) -> str:
        """Returns "1.40x", "n/a (interpreter)", "n/a (not timed)" or "-" (nothing correct)."""
        chosen = self.choice()
        return "-" if chosen is None else best.speedup_text(chosen)

    def text(self, scope: str = "") -> str:
        """Returns "5 candidates{scope} (2 repeats, ...), 4 correct, best speedup 1.40x", or
        "..., best speedup n/a (interpreter), ranked by correctness; timing not meaningful
        here"."""
        chosen = self.choice()
        why = f", ranked {chosen['ranking']}" if chosen and chosen["ranking"] else ""
        return (f"{candidates_text(self.candidates, self.repeats, scope)}, {self.correct} "
                f"correct, best speedup {self.speedup_text()}{why}")


@dataclasses.dataclass
class TaskProgress(RowCounts):
    """Counters shown for one task: its rows', and its islands', LLM calls' and fitness time."""

    generations: dict[int, int] = dataclasses.field(default_factory=dict)  # island -> done
    seed_rows: dict[str, dict] = dataclasses.field(default_factory=dict)  # candidate id -> row
    seeds: str = "-"
    llm: LLMTally = dataclasses.field(default_factory=LLMTally)
    usd: float = 0.0
    eval_seconds: float = 0.0

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
        self._noted: set[str] = set()  # the rankings `_note_ranking` has explained

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

    def resumed(self, campaign: str, done: dict[tuple[str, int], int], rows: list[dict],
                llm_calls: list[dict]) -> None:
        """Books what earlier runs recorded (`done`: island -> its checkpointed generation;
        the rows and LLM call rows of those generations), so the counts go on from there,
        and says what is resumed. Called before the display starts."""
        for (task, island), generation in done.items():
            if generation >= 0:
                self.tasks[task].generations[island] = generation
        for row in rows:
            shown = self.tasks[row["task"]]
            shown.add([row])
            if not row["reused"]:  # a fresh verdict: its fitness time was spent
                shown.eval_seconds += sum(row[s] or 0.0 for s in ("compile_s", "check_s",
                                                                   "bench_s"))
            if row["generation"] == 0:
                shown.seed_rows[row["candidate_id"]] = row
        for call in llm_calls:
            shown = self.tasks[call["task"]]
            shown.llm.add([call])
            shown.usd += call.get("cost_usd") or 0.0
        for shown in self.tasks.values():
            if len(shown.generations) == self.islands:
                shown.seeds = _seeds_text(list(shown.seed_rows.values()))
        low = min((g for g in done.values()), default=-1)
        high = max((g for g in done.values()), default=-1)
        where = (f"checkpoint at generation {low}" if low == high
                 else f"islands checkpointed at generations {low}-{high}") if high >= 0 \
            else "no checkpoint yet"
        self._print(f"resuming {campaign}: {len(rows)} evaluations already recorded, from "
                    f"generation {low + 1} of {self.generations} ({where})")

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
        shown.add(rows)
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
        shown.add(rows)
        shown.llm.add(llm_calls)
        shown.usd += sum(call.get("cost_usd") or 0.0 for call in llm_calls)
        shown.generations[island] = generation
        self._waits = []
        where = f" island {island}" if self.islands > 1 else ""
        self._note_ranking(shown)
        self._print(f"gen {generation}/{self.generations} {task}{where}: {self._counts(shown)}"
                    f"{_llm_text(shown)}, {self.time_name} time {shown.eval_seconds:.1f} s"
                    f"{_failure_text(shown)}")
        self._refresh()

    def _counts(self, shown: TaskProgress) -> str:
        """Returns "5 candidates on 2 islands (2 reused), 4 correct, best 1.40x": a task's
        rows over all its islands, in few words (the table's columns name them in full); a
        best that reads "n/a" is explained once (`_note_ranking`)."""
        on = f" on {self.islands} islands" if self.islands > 1 else ""
        reused = f" ({shown.repeats} reused)" if shown.repeats else ""
        chosen = shown.choice()
        best_text = "n/a" if chosen and chosen["ranking"] else shown.speedup_text()
        return (f"{candidates_text(shown.candidates, 0)}{on}{reused}, {shown.correct} correct, "
                f"best {best_text}")

    def _note_ranking(self, shown: TaskProgress) -> None:
        """Says once per campaign, on a line of its own, why a best reads n/a (the
        interpreter's timings rank nothing), instead of on every line."""
        chosen = shown.choice()
        if chosen and chosen["ranking"] and chosen["ranking"] not in self._noted:
            self._noted.add(chosen["ranking"])
            self._print(f"best {best.speedup_text(chosen)}: ranked {chosen['ranking']}")

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
        choices = [shown.choice() for shown in self.tasks.values()]
        rankings = sorted({chosen["ranking"] for chosen in choices if chosen and chosen["ranking"]})
        failing = [(name, shown.llm.last_error) for name, shown in self.tasks.items()
                   if shown.llm.last_error]
        notes = [f"n/a: ranked {ranking}" for ranking in rankings] + [
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
                          shown.speedup_text(), str(shown.llm.calls),
                          str(sum(shown.llm.failed.values())), f"{shown.usd:.2f}",
                          f"{shown.eval_seconds:.0f}")
        return table


LLM_ERROR_SHOWN = 100
"""Characters of an LLM call's last error a progress line shows (llm_calls/ holds it whole)."""


def _llm_text(shown: TaskProgress) -> str:
    """Returns ", LLM 6 calls, 1 failed (...) $0.0123" for a task whose islands called an
    LLM, "" for one that never did (offline)."""
    return f", LLM {shown.llm.text()} ${shown.usd:.4f}" if shown.llm.calls else ""


def _failure_text(shown: TaskProgress) -> str:
    """Returns "; last LLM failure: ..." (its first LLM_ERROR_SHOWN characters), or ""."""
    error = shown.llm.last_error
    return f"; last LLM failure: {error[:LLM_ERROR_SHOWN]}" if error else ""


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
        return f"{head}: its walk not begun"
    if doing["request"] is None:
        return f"{head}: {doing['stage']}, between requests (waiting for a worker or the device)"
    return (f"{head}: {doing['stage']}, {doing['request']} {doing['request_s']:.0f} s of its "
            f"{doing['limit_s']:.0f} s limit")


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
