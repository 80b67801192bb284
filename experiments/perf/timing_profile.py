"""Where a timing's seconds go: every built-in baseline timed as a candidate is, by phase.

A candidate's timing holds the device alone, so its seconds bound the pool's throughput on
one GPU (issue 12). This times each task's baseline on all its cases back to back, the way
the worker times a candidate (`timing.one_callers_cases`, buffers cloned, input variants
made, `timing.bench` per case), and splits each case's wall time into: making the buffers
and variants ("buffers"), and `timing.SPENT_S`'s phases (warm-up calls and graph capture,
clock reads and warm-up rounds, discarded settling batches, timed batches). Round 1 starts
with a fresh process; later rounds show the steady state.

With `--drift`, each case of at least `--drift-above-us` is also timed with settling off,
once after `--idle-s` of idle and once right after `--burn-s` of its own load: whether a
kernel's latency moves with the chip's recent load, the reason settling exists.

Baselines are trusted project code, so they run in this process.

    python experiments/perf/timing_profile.py --out timing_profile.md --rounds 2 --drift
    python experiments/perf/timing_profile.py --device interpreter --tasks vector_add --out /tmp/p.md
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from experiments.perf.timing_repeat import baseline_parser, chosen_tasks, load_baseline  # noqa: E402
from fitness.measure import timing  # noqa: E402
from fitness.device import detect  # noqa: E402

PHASES = ("buffers", "prepare", "warm", "settle", "timed")


def time_case(entry, inputs, device, config, floors=None) -> tuple[timing.LatencyStats, dict]:
    """Times one case like the worker does (`floors`: the case's roofline floors, as the
    judge sends them); returns (stats, seconds per phase)."""
    before = collections.Counter(timing.SPENT_S)
    began = time.perf_counter()
    buffers, refill = timing.refilled_copies(inputs)
    made = time.perf_counter()
    [stats] = timing.bench([lambda: entry(*buffers)], device, config, refill, floors_us=[floors])
    ended = time.perf_counter()
    spent = {name: timing.SPENT_S[name] - before[name] for name in PHASES[1:]}
    spent.update(buffers=made - began, total=ended - began)
    return stats, spent


def profile(tasks, device, config, rounds: int) -> list[dict]:
    """Returns one row per (round, task, case)."""
    folder = tempfile.mkdtemp(prefix="timing-profile-")
    entries = {task.name: load_baseline(task, folder) for task in tasks}
    rows = []
    for round_index in range(rounds):
        for task in tasks:
            cases = task.cases_for(device.backend)
            inputs = [task.make_inputs(case.params, 7 + round_index, device.torch_device)
                      for case in cases]
            entries[task.name](*inputs[0])  # compiled before, as the pool's warm-up does
            with timing.one_callers_cases():
                for case, values in zip(cases, inputs):
                    floors = timing.case_floors_us(device, task.flops, task.bytes, case.params)
                    stats, spent = time_case(entries[task.name], values, device, config, floors)
                    rows.append(dict(round=round_index + 1, task=task.name, case=case.name,
                                     median_us=stats.median_us, runs=stats.runs,
                                     stopped=stats.stopped, **spent))
            del inputs
    return rows


def drift(tasks, device, above_us: float, idle_s: float, burn_s: float) -> list[str]:
    """Returns table lines: each heavy case timed without settling after idle and after load."""
    folder = tempfile.mkdtemp(prefix="timing-drift-")
    unsettled = timing.TimingConfig(settle_max_s=0.0)
    lines = ["| task | case | after idle us | after load us | load / idle - 1 |", "|---|---|---|---|---|"]
    for task in tasks:
        entry = load_baseline(task, folder)
        for case in task.cases_for(device.backend):
            values = task.make_inputs(case.params, 3, device.torch_device)
            stats, _ = time_case(entry, values, device, unsettled)
            if stats.median_us < above_us:
                continue
            time.sleep(idle_s)
            idle, _ = time_case(entry, values, device, unsettled)
            until = time.perf_counter() + burn_s
            while time.perf_counter() < until:
                entry(*values)
            loaded, _ = time_case(entry, values, device, unsettled)
            lines.append(f"| {task.name} | {case.name} | {idle.median_us:.1f} | "
                         f"{loaded.median_us:.1f} | {loaded.median_us / idle.median_us - 1:+.2%} |")
    return lines


def summary(rows: list[dict]) -> list[str]:
    """Returns per-round totals and each task's per-candidate seconds (all its cases)."""
    lines = []
    for round_index in sorted({row["round"] for row in rows}):
        chosen = [row for row in rows if row["round"] == round_index]
        totals = {name: sum(row[name] for row in chosen) for name in PHASES + ("total",)}
        per_task = collections.defaultdict(float)
        for row in chosen:
            per_task[row["task"]] += row["total"]
        lines.append(f"round {round_index}: {len(chosen)} cases, {totals['total']:.2f} s, "
                     + ", ".join(f"{name} {totals[name] / totals['total']:.0%}" for name in PHASES)
                     + f"; per task (one candidate) mean {statistics.mean(per_task.values()) * 1e3:.0f} ms, "
                     f"max {max(per_task.values()) * 1e3:.0f} ms ({max(per_task, key=per_task.get)})")
    return lines


def table(rows: list[dict]) -> list[str]:
    lines = ["| round | task | case | median us | runs | stopped | "
             + " | ".join(f"{name} ms" for name in PHASES) + " | total ms |",
             "|" + "---|" * (7 + len(PHASES))]
    for row in rows:
        lines.append(f"| {row['round']} | {row['task']} | {row['case']} | {row['median_us']:.1f} | "
                     f"{row['runs']} | {row['stopped']} | "
                     + " | ".join(f"{row[name] * 1e3:.1f}" for name in PHASES)
                     + f" | {row['total'] * 1e3:.1f} |")
    return lines


def main() -> None:
    parser = baseline_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="a TimingConfig field to change (repeatable), e.g. ci_rel=0.0075")
    parser.add_argument("--drift", action="store_true", help="also run the drift experiment")
    parser.add_argument("--drift-above-us", type=float, default=150.0)
    parser.add_argument("--idle-s", type=float, default=1.0)
    parser.add_argument("--burn-s", type=float, default=2.0)
    args = parser.parse_args()

    import torch
    import triton

    device = detect(args.device)
    tasks = chosen_tasks(args)
    base = timing.INTERPRETER_TIMING if device.backend == "interpreter" else timing.TimingConfig()
    types = {field.name: field.type for field in dataclasses.fields(base)}
    changes = {}
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in types:
            raise SystemExit(f"--set {item!r}: TimingConfig has no field {key!r}; known: {sorted(types)}")
        changes[key] = value.lower() in ("1", "true", "yes") if types[key] in (bool, "bool") else float(value)
    config = dataclasses.replace(base, **changes)
    started = time.monotonic()
    rows = profile(tasks, device, config, args.rounds)
    lines = [f"# Timing profile: {device.name} ({device.backend}), torch {torch.__version__}, "
             f"triton {triton.__version__}, {datetime.date.today()}", "",
             f"`python {' '.join(sys.argv)}`; config changes {changes or 'none'}", "", "```"]
    lines += summary(rows)
    lines += ["```", ""] + table(rows)
    if args.drift and device.timing_meaningful:
        lines += ["", "## Drift: settling off, after idle vs right after load", ""]
        lines += drift(tasks, device, args.drift_above_us, args.idle_s, args.burn_s)
    lines += ["", f"wall {time.monotonic() - started:.0f} s"]
    text = "\n".join(lines)
    with open(args.out, "w") as handle:
        handle.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
