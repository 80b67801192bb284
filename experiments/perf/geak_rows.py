"""The rows of a measurement that spans several device calls (geak_timing.py): one JSON line
per task, appended and flushed as each finishes, so that a call cut short keeps what it
finished. The next call reads the earlier calls' files, skips their tasks, and the tables
are built from the union (a task's last row wins). A line cut by a kill mid-write is skipped.

Four sides share a file: "project" (a reference scored through the Evaluator, with where
its wall time went), "geak" (GEAK-eval's clock on the same reference), "call" (one per
device call: its wall time, rows and the Evaluator's meter: the evaluations per minute and
the breakdown are over calls, not over one) and "cut" (a task still running at a call's
deadline: how long it ran and on what, so that a task longer than a call's share says so and
the next call gives it the time it needs, `schedule`).
"""

from __future__ import annotations

import collections
import json
import pathlib
import re
import statistics

_JUDGE_UNTIMED = re.compile(r"^not timed: (?:(the timing code(?:'s calls cannot be recorded| failed "
                            r"when recorded)|the reference's outputs depend on more than its inputs)"
                            r"|(\w+ at \w+) on the performance inputs)")
"""A correct reference the judge left untimed: its calls not recorded, or failing on its
performance inputs (`fitness.judge.performance_inputs`)."""
_RECORDING_FAILED = "the timing code failed when recorded"
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): ?(.*)$", re.MULTILINE)
_REFERENCE_FAILED = re.compile(r"failed its own harness on \w+ \((\w+) at stage (\w+)\)")
CUT = "timed, cut as slower than its own baseline"
"""A reference that reached "timed" but read slower than `GIVE_UP_FACTOR` times its own
baseline's timing on its first case, its other cases left untimed (RESULTS.md §40): the
same code timed twice, so not a timed reference."""
STAGES = ("queue_s", "wall_s", "compile_s", "check_s", "bench_s", "other_s")
"""A project row's seconds: waiting for a thread of the call (queue), then the evaluation's
wall time, split into compilation on the performance inputs (`compile_s`: import, first
call), the checks (`check_s`: the suite's harness run, the checked calls on the performance
inputs), the judge's timed batches (`bench_s`) and the rest (`other_s`: the recording and the
reference's own runs when this walk made them, waits for a worker and for the device lock,
the static checks)."""


def append(path: pathlib.Path, row: dict) -> None:
    """Appends `row` as one line and flushes it: it is on disk when the next task starts."""
    with open(path, "a") as handle:
        handle.write(json.dumps(row) + "\n")
        handle.flush()


def read(paths) -> list[dict]:
    """Returns the rows of `paths` in order (files that do not exist hold none)."""
    rows = []
    for path in paths:
        path = pathlib.Path(path)
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the last line of a call killed while writing it
    return rows


def latest(rows: list[dict], side: str) -> dict[str, dict]:
    """Returns {task: its last row of `side`}: a task redone in a later call counts once."""
    return {row["task"]: row for row in rows if row.get("side") == side}


def cuts(rows: list[dict]) -> dict[str, dict]:
    """Returns {task: how often a call's deadline cut it and the longest it ran} for the tasks
    cut and never scored since (a later project row of the task supersedes its cuts):
    {"cuts": N, "ran_s": the longest, "requests_s": that run's, "suite": its suite}."""
    found: dict[str, dict] = {}
    for row in rows:
        if row.get("side") == "project":
            found.pop(row["task"], None)
        elif row.get("side") == "cut":
            earlier = found.get(row["task"], {"cuts": 0, "ran_s": -1.0})
            longest = row if row["ran_s"] > earlier["ran_s"] else earlier
            found[row["task"]] = {"cuts": earlier["cuts"] + 1, "ran_s": longest["ran_s"],
                                  "requests_s": longest.get("requests_s", {}), "suite": row.get("suite"),
                                  "doing": longest.get("doing")}
    return found


CUT_ROOM = 2.0
"""A task a call's deadline cut is started only with this many times the time it ran still
left (`geak_timing.py`): it was still going then. A walk is not resumable: eight cut after
100 s, started again at once with 476 s left, held all eight threads for the whole call
and were cut again, scoring nothing else (RESULTS.md#cut-last). Named with `--again`, it
starts whatever is left."""


def schedule(tasks: list, cut: dict[str, dict], first: set[str],
             scored: set[str] = frozenset()) -> list:
    """Returns `tasks` in the order a call starts them: those named in `first`; then those
    never scored, the ones a deadline cut after the rest, shortest-running first (each
    started only with `CUT_ROOM` times what it ran still left); last those `scored` in an
    earlier call (scored again by `--redo`: most fail again, where a task never scored is
    most often timed)."""
    return sorted(tasks, key=lambda task: (task.name not in first, task.name in scored,
                                           cut.get(task.name, {}).get("ran_s", 0.0), task.name))


def doing(snapshot: dict) -> dict:
    """Returns what an evaluation under way (`Evaluator.in_progress`) was doing, for a cut
    row: its stage, the request it waited on ("role.op", None between requests: waiting for a
    worker, a checker or the device) and for how long."""
    waited = snapshot.get("request_s")
    return {"stage": snapshot.get("stage"), "request": snapshot.get("request"),
            "request_s": None if waited is None else round(waited, 1)}


def doing_text(entry: dict | None) -> str:
    """Returns `doing`'s words after a comma (", in candidate.call for 300 s at stage
    correct"), "" where it is not known (a row of a call before cut rows said it)."""
    if not entry:
        return ""
    if entry.get("request") is None:
        return f", between requests at stage {entry.get('stage')}"
    return f", in {entry['request']} for {entry['request_s']:.0f} s at stage {entry.get('stage')}"


def cut_lines(cut: dict[str, dict]) -> list[str]:
    """Returns one line per never-scored task a call's deadline cut: how often, the longest it
    ran, what it was doing then and its largest requests on that run (why it is not scored
    yet)."""
    return [f"  not scored: {task}: cut by a call's deadline {entry['cuts']}x, at most after "
            f"{entry['ran_s']:.0f} s{doing_text(entry.get('doing'))} ({most_spent(entry['requests_s'])})"
            for task, entry in sorted(cut.items(), key=lambda item: -item[1]["ran_s"])]


def calls(rows: list[dict]) -> list[dict]:
    """Returns one row per call in the order the calls began: its own, or for a call killed
    before it wrote it (an outer time limit) one made from its project rows (their count;
    the end of the last as its wall)."""
    order, own, made = [], {}, collections.defaultdict(list)
    for row in rows:
        if row.get("side") not in ("call", "project") or (row["side"] == "project" and "call" not in row):
            continue  # a GEAK-eval row, or one of a campaign's (`--from-results`): no call of ours
        if row.get("call") not in order:
            order.append(row.get("call"))
        if row["side"] == "call":
            own[row.get("call")] = row
        else:
            made[row.get("call")].append(row)
    return [own.get(call) or {"side": "call", "call": call, "rows": len(made[call]), "device": "-", "cut": True,
                              "wall_s": max(row["queue_s"] + row["wall_s"] for row in made[call])}
            for call in order]


def untimed(evaluation, task) -> tuple[str, str]:
    """Returns (reason, kind) of a reference scored as its own candidate that was not timed,
    ("", "") if it was: the reason in full as the walk wrote it, the kind a short label the
    summary counts (the task has no usable performance file; the reference's own timing pass
    or harness failed, and how; or the failure that stopped the walk)."""
    if evaluation.stage_reached == "timed":
        return "", ""
    trace = evaluation.error_trace or ""
    failed = _REFERENCE_FAILED.search(trace)
    if evaluation.correct:
        if task.untimed_reason:
            return task.untimed_reason, "no usable performance file"
        judged = _JUDGE_UNTIMED.search(trace)
        if judged:  # the judge's timing on the performance inputs (`performance_inputs`)
            kind = _with_fault(judged.group(1), trace) or f"performance inputs: {judged.group(2)}"
        else:
            kind = f"reference timing pass: {failed.group(1)}" if failed else "reference timing pass failed"
        return trace or "correct but not timed, no reason given", kind
    kind = (f"reference harness: {failed.group(1)} at {failed.group(2)}" if failed
            else f"{evaluation.failure_kind} at {evaluation.stage_reached}")
    return f"{evaluation.stage_reached} {evaluation.failure_kind}: {trace}", kind


def _with_fault(kind: str | None, trace: str) -> str | None:
    """Returns `kind`, and for a recording that failed the fault it raised (`fault`): an
    illegal memory access (a reference reading past its inputs), running out of memory and
    a compile error are different stories."""
    return f"{kind}: {fault(trace)}" if kind == _RECORDING_FAILED else kind


def fault(trace: str) -> str:
    """Returns the last exception of `trace` in a few words: a CUDA error's message to its
    first full stop, else the exception's class."""
    found = list(_EXCEPTION_LINE.finditer(trace))
    if not found:
        return "no exception named"
    name, message = found[-1].groups()
    return message.split(".")[0].strip() if message.startswith("CUDA") else name


def untimed_kind(row: dict) -> str:
    """Returns why `row`'s reference is not timed on every case ("" if it is): its
    `untimed_kind`, or `CUT` for a timed row with untimed cases (rows from a campaign's
    results, `geak_timing.rows_of_results`, carry no candidate latencies and are timed)."""
    if row["stage"] == "timed":
        return CUT if None in (row.get("latency_us") or []) else ""
    return row.get("untimed_kind") or "no reason recorded"


def older(row: dict) -> bool:
    """Whether `row`'s reference is untimed by a harness version other than this checkout's
    (rows from before the version was recorded included): fixes since may time it."""
    from fitness import EXTERNAL_HARNESS_VERSION

    return bool(untimed_kind(row)) and row.get("harness_version") != EXTERNAL_HARNESS_VERSION


def reason_counts(rows: list[dict]) -> list[str]:
    """Returns one line per kind of untimed reason, most frequent first, with its tasks (a
    failed recording of a row scored before its fault was named, by its reason's)."""
    tasks = collections.defaultdict(list)
    for row in rows:
        if kind := untimed_kind(row):
            tasks[_with_fault(kind, row.get("untimed_reason") or "")].append(row["task"])
    return [f"  {len(names):3d} {kind}: {', '.join(sorted(names))}"
            for kind, names in sorted(tasks.items(), key=lambda item: -len(item[1]))]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _steady(rows: list[dict], call: dict) -> str:
    """Returns the call's rate while tasks were still starting (the rows that finished by its
    last start over that time: no drain at the end, no set-up), as ", steady N/min"."""
    mine = [row for row in rows if row.get("call") == call.get("call") and "queue_s" in row]
    last_start_s = max((row["queue_s"] for row in mine), default=0.0)
    finished = sum(row["queue_s"] + row["wall_s"] <= last_start_s for row in mine)
    return f", steady {finished / last_start_s * 60:.1f}/min" if finished and last_start_s else ""


def most_spent(requests_s: dict, most: int = 4) -> str:
    """Returns the `most` request kinds a task's walks spent longest in (its candidate's,
    baseline's and reference's together; they overlap, so they may add past its wall)."""
    top = sorted(requests_s.items(), key=lambda item: -item[1])[:most]
    return ", ".join(f"{name} {seconds:.1f}" for name, seconds in top) or "no request"


def slowest_lines(rows: list[dict], most: int = 10, kinds: int = 4) -> list[str]:
    """Returns the `most` slowest rows that say on what their task's requests spent their
    time (`requests_s`), each with its `kinds` largest (`most_spent`)."""
    spoken = sorted((row for row in rows if row.get("requests_s")), key=lambda row: -row["wall_s"])
    if not spoken:
        return []
    lines = [f"the slowest {min(most, len(spoken))} of {len(spoken)} rows with their requests (seconds):"]
    for row in spoken[:most]:
        lines.append(f"  {row['task']:32} wall {row['wall_s']:6.1f}: {most_spent(row['requests_s'], kinds)}")
    return lines


def breakdown_lines(rows: list[dict], calls: list[dict]) -> list[str]:
    """Returns where the time went: per stage of the project rows (median, p90, sum and its
    share of the summed wall), then the calls' evaluations per minute and their Evaluator
    meters summed (seconds and counts of each kind of request, waits for a worker and for
    the device lock)."""
    measured = [row for row in rows if all(isinstance(row.get(stage), (int, float)) for stage in STAGES)]
    lines = []
    if measured:
        wall = sum(row["wall_s"] for row in measured) or 1.0
        lines.append(f"where an evaluation's time went, over {len(measured)} rows (seconds):")
        lines.append(f"  {'stage':10} {'median':>8} {'p90':>8} {'sum':>9} {'of wall':>8}")
        for stage in STAGES:
            values = [row[stage] for row in measured]
            lines.append(f"  {stage:10} {statistics.median(values):8.2f} {_quantile(values, 0.9):8.2f} "
                         f"{sum(values):9.1f} {sum(values) / wall:8.1%}")
    lines += slowest_lines(measured)
    wall_s = sum(call["wall_s"] for call in calls)
    scored = sum(call["rows"] for call in calls)
    for number, call in enumerate(calls, 1):
        lines.append(f"call {number}: {call['rows']} evaluations in {call['wall_s']:.0f} s = "
                     f"{call['rows'] / max(call['wall_s'], 1e-9) * 60:.1f}/min, {call.get('workers')} "
                     f"workers, set-up {call.get('setup_s', 0):.0f} s{_steady(rows, call)}")
    if calls:
        lines.append(f"all calls: {scored} evaluations in {wall_s:.0f} s = "
                     f"{scored / max(wall_s, 1e-9) * 60:.1f}/min")
    totals: dict[str, float] = collections.Counter()
    counts: dict[str, int] = collections.Counter()
    for call in calls:
        stats = call.get("stats") or {}
        totals.update(stats.get("request_s", {}))
        counts.update(stats.get("requests", {}))
        totals.update({f"lock.{key}": stats.get(key, 0.0)
                       for key in ("busy_s", "timing_wait_s", "drain_wait_s", "walk_wait_s")})
        totals.update({f"evaluator.{key}": stats.get(key, 0)
                       for key in ("kernel_s", "retries", "respawns", "timing_holds")})
    if totals:
        lines.append("the Evaluator's meter, summed over the calls (request: count, seconds):")
        for name in sorted(totals):
            if name.count(".") > 2:
                continue  # a reply's own phases: in the JSON, not the table
            count = f"{counts[name]:6d}" if name in counts else " " * 6
            lines.append(f"  {name:40} {count} {totals[name]:9.1f}")
        alone_s = sum(totals.get(name, 0.0) for name in ("checker.timed_release", "checker.timed_judge"))
        if wall_s and alone_s:  # the requests a walk makes holding the device alone (fitness_bench's HELD_ALONE)
            lines.append(f"timed batches held the device alone {alone_s:.0f} s of {wall_s:.0f} s "
                         f"({alone_s / wall_s:.0%}); at that alone, at most "
                         f"{scored / max(alone_s, 1e-9) * 60:.0f} evaluations/min")
    return lines
