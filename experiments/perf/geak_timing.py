"""TritonBench-revised's timing checked against GEAK-eval's own: each task's reference scored
through the project's Evaluator (its timing pass on the task's performance inputs, issue 43),
then timed by GEAK-eval's timing code on the same inputs and card, with the recorded MI300X
golden latencies beside them for scale.

What it prints and writes:
- coverage and throughput: how many references are timed (goal: at least 175 of 184) and
  external evaluations per minute (goal: at least 100 on one GPU), ROCm's references too;
- per task, the summed latency over its performance inputs by three clocks: the project's
  (`ref_latency_us`, the reference's own timing pass), GEAK-eval's (`Performance_Metrics
  .get_runtime`: triton.testing.do_bench, median, on the same inputs: GEAK-eval's
  `geak_eval/perf/performance_utils.py` imported from the checkout) and the MI300X golden
  results GEAK-eval committed; and the reference scored as its own candidate (a speedup of 1
  up to noise).

GEAK-eval's clock runs in child processes (a few tasks each, one at a time: the device is
timed alone; a child that fails a task stops there, a CUDA error being sticky), importing the kernel and the performance file as GEAK-eval's scripts do, with
`geak_eval` from the checkout on sys.path: nothing of it is sandboxed, as GEAK-eval runs it.
Its do_bench settings default to the class's own (warm-up 25 ms, 100 ms of runs) rather than
GEAK-eval's 100/1000 ms, so that the 184 tasks fit a device call; `--geak-warmup-ms` and
`--geak-rep-ms` restore them.

  source experiments/perf/gpu_env.sh .wheelhouse
  python3 experiments/perf/geak_timing.py --path .external/GEAK-eval --workers 12 \\
      --out $OUT/geak_timing.json
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import registry  # noqa: E402
from benchmarks.external import geak_perf  # noqa: E402

GOAL_TIMED = 175
GOAL_PER_MIN = 100.0

_GEAK_DRIVER = r'''
import importlib.util, json, os, random, sys, traceback
geak_root, kernel_folder, perf_folder, warmup, rep, out = sys.argv[1:7]
stems = sys.argv[7:]
sys.path[:0] = [geak_root, kernel_folder]
import numpy, torch
import geak_eval.perf.performance_utils
torch.cuda.get_device_name(0)
for stem in stems:
    record = {"task": stem, "ms": None, "error": None}
    try:
        random.seed(42); numpy.random.seed(42); torch.manual_seed(42)
        spec = importlib.util.spec_from_file_location(stem + "_perf", os.path.join(perf_folder, stem + "_perf.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        op = module.performance_metrics()
        op.get_input_tensors()
        op.get_do_bench_config(warmup=float(warmup), rep=float(rep))
        times = []
        for host_input in op.input_tensors:
            on_device = op.to_cuda(host_input)
            op.call_op(on_device)
            times.append(op.get_runtime(lambda: op.call_op(on_device)))
            del on_device
        record["ms"] = times
    except BaseException as error:
        record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
    with open(out, "a") as handle:
        handle.write(json.dumps(record) + "\n")
    if record["error"]:
        break  # a CUDA error is sticky: the next task starts in a fresh child
    torch.cuda.empty_cache()
'''


def project_side(tasks, device: str, workers: int, timeout: float | None,
                 deadline: float) -> tuple[list[dict], float, str]:
    """Scores every task's reference as a candidate through the Evaluator, until done or the
    deadline (monotonic; what is still running then is left out); returns (rows, wall
    seconds, device name)."""
    from evo.records import make_candidate
    from fitness import Evaluator, Limits, Settings

    settings = Settings(device=device, workers=workers, static_gate=True,
                        timeouts=Limits.uniform(timeout) if timeout else Limits())
    evaluator = Evaluator(settings)
    started = time.monotonic()

    def score(task) -> dict:
        evaluation = evaluator.evaluate(task, make_candidate(task.name, task.baseline_source))
        return {"task": task.name, "suite": task.suite, "difficulty": task.difficulty,
                "stage": evaluation.stage_reached, "correct": evaluation.correct,
                "failure_kind": evaluation.failure_kind, "untimed": task.untimed_reason,
                "trace": (evaluation.error_trace or "")[-300:],
                "latency_us": list(evaluation.latency_us or ()),
                "ref_latency_us": list(evaluation.ref_latency_us or ()),
                "speedup": evaluation.speedup, "check_s": evaluation.check_s, "bench_s": evaluation.bench_s}

    pool = concurrent.futures.ThreadPoolExecutor(workers)
    futures = {pool.submit(score, task): task for task in tasks}
    rows = []
    for future in concurrent.futures.as_completed(futures, timeout=None):
        rows.append(future.result())
        row = rows[-1]
        print(f"[{len(rows)}/{len(tasks)} {time.monotonic() - started:.0f} s] {row['task']}: {row['stage']} "
              f"{row['failure_kind'] or ''} check {row['check_s']:.1f} s bench {row['bench_s']:.1f} s", flush=True)
        if time.monotonic() > deadline:
            break
    pool.shutdown(wait=False, cancel_futures=True)
    wall_s = time.monotonic() - started
    device = evaluator.device.name
    threading.Thread(target=evaluator.close, daemon=True).start()
    return rows, wall_s, device


def rows_of_results(folder: str) -> list[dict]:
    """Returns one row per task of a campaign's results folder, with its reference's
    latencies as the campaign's timing pass measured them (every timed row carries them)."""
    import pandas

    frame = pandas.read_parquet(pathlib.Path(folder) / "evaluations")
    rows = []
    for task, group in frame.groupby("task"):
        timed = group[group["stage_reached"] == "timed"]
        first = timed.iloc[0] if len(timed) else group.iloc[0]
        rows.append({"task": task, "suite": "tritonbench-revised", "stage": first["stage_reached"],
                     "correct": bool(group["correct"].any()), "failure_kind": first["failure_kind"],
                     "untimed": "", "trace": str(first["error_trace"] or ""),
                     "ref_latency_us": [float(v) for v in first["ref_latency_us"]] if len(timed) else [],
                     "speedup": None})
    return rows


def geak_side(geak_root: pathlib.Path, stems: list[str], warmup_ms: float, rep_ms: float,
              per_child: int, deadline: float) -> dict[str, dict]:
    """Times each task's reference with GEAK-eval's code; returns {stem: {"ms", "error"}}."""
    kernel_folder = registry.load("tritonbench-revised", str(geak_root)).tasks()[0].source_path
    kernel_folder = str(pathlib.Path(kernel_folder).parent)
    perf_folder = str(geak_perf.find(pathlib.Path(kernel_folder), stems[0]).parent)
    results: dict[str, dict] = {}
    left = list(stems)
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "geak.jsonl")
        while left and time.monotonic() < deadline:
            chunk = left[:per_child]
            try:
                subprocess.run([sys.executable, "-c", _GEAK_DRIVER, str(geak_root.resolve()), kernel_folder,
                                perf_folder, str(warmup_ms), str(rep_ms), out, *chunk], cwd=scratch,
                               timeout=max(10.0, min(60.0 * len(chunk), deadline - time.monotonic())),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                pass
            if os.path.exists(out):
                for line in open(out):
                    record = json.loads(line)
                    results[record["task"]] = record
            done = [stem for stem in chunk if stem in results]
            stuck = chunk[len(done)] if len(done) < len(chunk) else None
            if stuck is not None:  # the child died or hung on it: record, go on after it
                results[stuck] = {"task": stuck, "ms": None, "error": "the child died or timed out here"}
            left = [stem for stem in left if stem not in results]
    return results


def golden_ms(geak_root: pathlib.Path, stem: str) -> list[float] | None:
    path = next(geak_root.glob(f"**/perf_G/golden_results/{stem}.json"), None)
    return [entry["ms"] for entry in json.loads(path.read_text())] if path else None


def _sum(values) -> float | None:
    return sum(values) if values and all(v is not None for v in values) else None


def _geomean(values: list[float]) -> float | None:
    return math.exp(statistics.fmean(map(math.log, values))) if values else None


def comparison(rows: list[dict], geak: dict[str, dict], geak_root: pathlib.Path) -> list[dict]:
    """Returns one row per TritonBench-revised task: summed latency (us) by each clock."""
    table = []
    for row in rows:
        if row["suite"] != "tritonbench-revised":
            continue
        stem = row["task"]
        ours = row["ref_latency_us"]
        theirs = (geak.get(stem) or {}).get("ms") or []
        golden = golden_ms(geak_root, stem)
        same_inputs = bool(ours) and bool(theirs) and len(ours) == len(theirs)
        per_input = [o / (t * 1e3) for o, t in zip(ours, theirs)] if same_inputs else []
        table.append({"task": stem, "inputs": len(ours) or (len(theirs) if theirs else 0),
                      "ours_us": _sum(ours), "geak_us": _sum([t * 1e3 for t in theirs]),
                      "mi300x_us": _sum([g * 1e3 for g in golden or []]),
                      "ours_over_geak": _geomean(per_input),
                      "ours_over_geak_small": _geomean([r for r, t in zip(per_input, theirs) if t * 1e3 < 20]),
                      "ours_over_geak_large": _geomean([r for r, t in zip(per_input, theirs) if t * 1e3 >= 20]),
                      "self_speedup": row["speedup"],
                      "geak_error": (geak.get(stem) or {}).get("error")})
    return table


def summary_lines(rows: list[dict], wall_s: float, table: list[dict], device: str) -> list[str]:
    lines = [f"device: {device}"]
    for suite in ("tritonbench-revised", "rocm"):
        mine = [row for row in rows if row["suite"] == suite]
        timed = [row for row in mine if row["stage"] == "timed"]
        goal = f" (goal >= {GOAL_TIMED})" if suite == "tritonbench-revised" else ""
        lines.append(f"{suite}: {len(timed)} of {len(mine)} references timed{goal}; "
                     f"{sum(row['correct'] for row in mine)} correct")
        for row in mine:
            if row["stage"] != "timed":
                why = row["untimed"] or f"{row['stage']} {row['failure_kind']}: {row['trace'][-160:]}"
                lines.append(f"  not timed: {row['task']}: {why}".replace("\n", " "))
    if wall_s:
        lines.append(f"external evaluations: {len(rows)} in {wall_s:.0f} s = {len(rows) / wall_s * 60:.1f}/min "
                     f"(goal >= {GOAL_PER_MIN:g})")
    both = [row for row in table if row["ours_over_geak"] is not None]
    for key, label in (("ours_over_geak", "all inputs"), ("ours_over_geak_small", "inputs under 20 us (GEAK)"),
                       ("ours_over_geak_large", "inputs of 20 us and more")):
        ratios = [row[key] for row in both if row[key] is not None]
        if ratios:
            lines.append(f"project / GEAK-eval latency, {label}: geomean {_geomean(ratios):.3f}, "
                         f"median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
                         f"over {len(ratios)} tasks")
    selfs = [row["self_speedup"] for row in table if row["self_speedup"]]
    if selfs:
        lines.append(f"reference against itself (the project's speedup): geomean {_geomean(selfs):.3f}, "
                     f"range {min(selfs):.3f}-{max(selfs):.3f} over {len(selfs)} tasks")
    scale = [row["ours_us"] / row["mi300x_us"] for row in table if row["ours_us"] and row["mi300x_us"]]
    if scale:
        lines.append(f"project (this card) / MI300X golden: geomean {_geomean(scale):.3f} over {len(scale)} tasks")
    lines.append(f"{'task':40} {'inputs':>6} {'ours us':>10} {'GEAK us':>10} {'MI300X us':>10} {'ours/GEAK':>9}")
    for row in table:
        cells = [f"{row[k]:.1f}" if row[k] is not None else "-" for k in ("ours_us", "geak_us", "mi300x_us")]
        ratio = f"{row['ours_over_geak']:.3f}" if row["ours_over_geak"] is not None else (row["geak_error"] or "-")[:40]
        lines.append(f"{row['task'][:40]:40} {row['inputs']:>6} {cells[0]:>10} {cells[1]:>10} {cells[2]:>10} {ratio:>9}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", required=True, help="the GEAK-eval checkout")
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--device", default="cuda", help="interpreter: the project's side only (a smoke run)")
    parser.add_argument("--timeout", type=float, default=None, help="uniform stage limit (s)")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--no-rocm", action="store_true", help="TritonBench-revised only")
    parser.add_argument("--geak-warmup-ms", type=float, default=25.0)
    parser.add_argument("--geak-rep-ms", type=float, default=100.0)
    parser.add_argument("--geak-per-child", type=int, default=12)
    parser.add_argument("--max-wall-s", type=float, default=540.0)
    parser.add_argument("--project-wall-s", type=float, default=300.0,
                        help="the project side's share of --max-wall-s")
    parser.add_argument("--out", default="geak_timing.json")
    parser.add_argument("--from-results", default="",
                        help="a TritonBench-revised campaign's results folder: its reference "
                             "latencies instead of scoring the references here")
    args = parser.parse_args()
    started = time.monotonic()
    geak_root = pathlib.Path(args.path)
    wanted = {name for name in args.tasks.split(",") if name}
    suites = ("tritonbench-revised",) if args.no_rocm else ("tritonbench-revised", "rocm")
    tasks = [task for suite in suites for task in registry.load(suite, str(geak_root)).tasks()
             if (not wanted or task.name in wanted) and args.device in task.runnable_on]
    if args.from_results:  # the references' latencies as a campaign measured them
        rows, wall_s, device = rows_of_results(args.from_results), 0.0, args.device
    else:
        rows, wall_s, device = project_side(tasks, args.device, args.workers, args.timeout,
                                            started + args.project_wall_s)
    print(f"project side: {len(rows)} evaluations in {wall_s:.0f} s", flush=True)
    stems = [row["task"] for row in rows if row["suite"] == "tritonbench-revised"]
    geak = geak_side(geak_root, stems, args.geak_warmup_ms, args.geak_rep_ms, args.geak_per_child,
                     started + args.max_wall_s) if stems and args.device == "cuda" else {}
    table = comparison(rows, geak, geak_root)
    lines = summary_lines(rows, wall_s, table, device)
    print("\n".join(lines))
    pathlib.Path(args.out).write_text(json.dumps(
        {"device": device, "wall_s": wall_s, "settings": vars(args), "rows": rows, "geak": geak,
         "table": table}, indent=1))
    pathlib.Path(args.out).with_suffix(".txt").write_text("\n".join(lines) + "\n")
    os._exit(0)  # an evaluation still running at the deadline would hold the interpreter's exit


if __name__ == "__main__":
    main()
