"""Timing repeatability and cost: every built-in baseline, every case, timed several times.

What it answers: does `fitness.measure.timing.bench` give the same median for the same kernel when
it is timed again later (fresh inputs at new addresses, other kernels timed in between), and
what does a timing cost. Issue 12's goal: max spread <= 2% over cases of at least 20 us.

Each round times every case of every task once, with inputs made afresh for the round (a
new seed, as two evaluations of the same kernel get). Before the first case of each round
the GPU is left idle for `--pause-s`, so that case (marked `cold`) is timed from dropped
clocks. With `--fixed` each case is also timed, on the same buffers, by the scheme before
adaptive repetition (`FIXED`: 0.02 s of timed work in 30..500 runs after a warm-up counted
in calls, with today's launch pad and graph warm-up, no settling), and both tables are printed.

Baselines are trusted project code, so they run in this process.

    python experiments/perf/timing_repeat.py --out timing_repeat.md --fixed
    python experiments/perf/timing_repeat.py --device interpreter --tasks vector_add --out /tmp/t.md

Printed per case: median us of each round, spread = max/min - 1 of those medians, runs and
stop reasons per round; then per scheme: max and median spread over cases >= 20 us (and over
all), runs, and the seconds spent inside bench() (warm-up, capture and timed runs).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib.util
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from benchmarks.registry import builtin  # noqa: E402
from fitness.measure import timing  # noqa: E402
from fitness.device import detect  # noqa: E402

FIXED = timing.TimingConfig(min_runs=30, max_runs=500, max_timed_s=0.02, ci_rel=0.0,
                            settle_max_s=0.0)
BOUND_US = 20.0  # the repeatability goal holds for cases at least this slow


def load_baseline(task, folder: str):
    """Returns the baseline's entry point, imported from a module file (Triton reads source)."""
    path = os.path.join(folder, f"baseline_{task.name}.py")
    with open(path, "w") as handle:
        handle.write(task.baseline_source)
    spec = importlib.util.spec_from_file_location(f"baseline_{task.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, task.entry_point)


def measure(tasks, device, schemes: dict, rounds: int, pause_s: float) -> dict:
    """Returns {scheme: {(task, case): [(LatencyStats, seconds in bench), ...per round]}}."""
    folder = tempfile.mkdtemp(prefix="timing-repeat-")
    entries = {task.name: load_baseline(task, folder) for task in tasks}
    results = {name: {} for name in schemes}
    for round_index in range(rounds):
        for task_index, task in enumerate(tasks):
            for case_index, case in enumerate(task.cases_for(device.backend)):
                inputs = task.make_inputs(case.params, 1000 + round_index, device.torch_device)
                for name, config in schemes.items():
                    if (task_index, case_index) == (0, 0):
                        time.sleep(pause_s)  # both schemes start this case from an idle GPU
                    buffers, refill = timing.refilled_copies(inputs)
                    entry = entries[task.name]
                    started = time.perf_counter()
                    floors = timing.case_floors_us(device, task.flops, task.bytes, case.params)
                    [stats] = timing.bench([lambda: entry(*buffers)], device, config, refill,
                                           floors_us=[floors])
                    spent_s = time.perf_counter() - started
                    results[name].setdefault((task.name, case.name), []).append((stats, spent_s))
        print(f"round {round_index + 1}/{rounds} done", flush=True)
    return results


def spread(medians) -> float:
    return max(medians) / min(medians) - 1


def table(name: str, by_case: dict, cold: tuple) -> list[str]:
    """Returns the markdown table of one scheme, a row per case."""
    lines = [f"### {name}", "",
             "| task | case | median us per round | spread | runs per round | stopped |",
             "|---|---|---|---|---|---|"]
    for (task, case), repeats in by_case.items():
        medians = [stats.median_us for stats, _ in repeats]
        mark = " (cold)" if (task, case) == cold else ""
        lines.append(f"| {task} | {case}{mark} | {' / '.join(f'{m:.2f}' for m in medians)} | "
                     f"{spread(medians):.2%} | {' / '.join(str(s.runs) for s, _ in repeats)} | "
                     f"{' / '.join(s.stopped for s, _ in repeats)} |")
    return lines


def summary(name: str, by_case: dict, selected: set) -> list[str]:
    """Returns the scheme's summary lines; `selected` are the cases of at least BOUND_US."""
    spreads = {key: spread([s.median_us for s, _ in repeats]) for key, repeats in by_case.items()}
    bounded = {key: value for key, value in spreads.items() if key in selected}
    runs = [stats.runs for repeats in by_case.values() for stats, _ in repeats]
    seconds = sum(spent for repeats in by_case.values() for _, spent in repeats)
    reasons = collections.Counter(stats.stopped for repeats in by_case.values()
                                  for stats, _ in repeats)
    lines = [f"{name}: {len(runs)} timings, {seconds:.1f} s in bench() "
             f"({1e3 * seconds / len(runs):.1f} ms each), runs median "
             f"{statistics.median(runs):.0f} max {max(runs)}, stopped {dict(sorted(reasons.items()))}"]
    if bounded:
        worst = max(bounded, key=bounded.get)
        lines.append(f"{name}: spread over {len(bounded)} cases >= {BOUND_US:g} us: max "
                     f"{bounded[worst]:.2%} ({worst[0]} {worst[1]}), median "
                     f"{statistics.median(bounded.values()):.2%}")
    lines.append(f"{name}: spread over all {len(spreads)} cases: max {max(spreads.values()):.2%}, "
                 f"median {statistics.median(spreads.values()):.2%}")
    return lines


def baseline_parser(description: str) -> argparse.ArgumentParser:
    """Returns a parser with the options every baseline-timing script takes:
    --out, --device, --tasks (see `chosen_tasks`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="write the tables and summary here")
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    return parser


def chosen_tasks(args: argparse.Namespace) -> list:
    """Returns the built-in tasks named by --tasks, all of them when it is empty."""
    registry = builtin()
    names = [n for n in args.tasks.split(",") if n]
    return [registry.get(n) for n in names] if names else registry.tasks()


def main() -> None:
    parser = baseline_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timings per case")
    parser.add_argument("--pause-s", type=float, default=2.0,
                        help="idle seconds before each round's first case (longer than idle_s)")
    parser.add_argument("--fixed", action="store_true",
                        help="also time every case with the fixed scheme, and compare")
    args = parser.parse_args()

    import torch
    import triton

    device = detect(args.device)
    tasks = chosen_tasks(args)
    schemes = {"adaptive": None, **({"fixed": FIXED} if args.fixed else {})}
    started = time.monotonic()
    results = measure(tasks, device, schemes, args.rounds, args.pause_s)
    first = tasks[0]
    cold = (first.name, first.cases_for(device.backend)[0].name)
    adaptive = results["adaptive"]
    selected = {key for key, repeats in adaptive.items()
                if min(s.median_us for s, _ in repeats) >= BOUND_US}
    wall_s = time.monotonic() - started
    lines = [f"# Timing repeatability: {device.name} ({device.backend}), "
             f"torch {torch.__version__}, triton {triton.__version__}, {datetime.date.today()}", "",
             f"`python {' '.join(sys.argv)}`; {args.rounds} rounds, {len(adaptive)} cases, "
             f"{args.pause_s:g} s idle before the cold case; wall {wall_s:.0f} s",
             "", "```"]
    for name, by_case in results.items():
        lines += summary(name, by_case, selected)
    lines += ["```", ""]
    for name, by_case in results.items():
        lines += table(name, by_case, cold) + [""]
    text = "\n".join(lines)
    with open(args.out, "w") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
