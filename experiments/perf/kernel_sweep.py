"""Per-case sweep of a built-in baseline's per-shape table (`CONFIGS`), against torch's own op.

The machinery the family sweeps share (matmul_sweep.py: matmul and batched_matmul against
cuBLAS; attention_sweep.py: flash_attention against fused SDPA). A `Family` says which tasks,
which configs each case is swept over (the table's own first), how a config is labelled, and
which torch op is the yardstick (`suite_bench.NATIVE`, else the task's reference: what torch
eager runs; membound_sweep.py); this module runs them:
- Phase 1 (compile): worker processes run each (case, config) once, in priority order and
  round-robin over cases, filling Triton's disk cache; a config that fails to compile or run
  is recorded with its error and never reaches phase 2; a job whose worker dies or hangs is
  recorded failed after --job-timeout and the others go on.
- Phase 2 (time): this process, alone on the device, checks each config that ran against the
  task's reference (the fitness harness's rule, `fitness.judge.checking`) and times it with
  triton.testing.do_bench (median of CUDA-graph replays, L2 cleared before each) beside the op.
- --max-seconds bounds the run; phase 1 gets --compile-share of it, phase 2 splits the rest
  evenly over the cases; what was not reached is recorded "not_run".
Writes OUT_DIR/sweep.csv (a row per case x config), best.json and summary.md (also printed):
best per case and per design, and per bucket the config best over all its cases, as CONFIGS lines.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import importlib.util
import itertools
import json
import math
import multiprocessing
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks import registry  # noqa: E402
from benchmarks.builtin import common  # noqa: E402
from fitness.judge import checking  # noqa: E402

SEED = 1234
POLL_S = 0.2
"""Seconds between looks at the phase-1 workers' results."""
HEAD = ("task", "case", "bucket", "source", "label")
TAIL = ("status", "error", "run_s", "median_us", "timed_by", "tflops", "library_us", "library_tflops",
        "vs_library", "max_abs_err")

_loaded: dict = {}  # per process: task name -> (kernel module, its own CONFIGS); ("inputs", ...) -> tensors


@dataclasses.dataclass(frozen=True)
class Family:
    """What a family sweep supplies (used in this process only: a worker's job carries a task
    name and a config).

    Attributes:
      title: what the summary calls the sweep ("Matmul").
      tasks: the built-in tasks it sweeps.
      library: the name of the torch op it is measured against ("cuBLAS").
      grid: (kernel module, case params, SM count, max configs, wide) -> configs, the table's first.
      bucket_args: case params -> the arguments of the module's `_bucket`.
      design_knobs: the knobs that switch the algorithm; a summary table is kept per setting.
      label: config -> a short name ("P1 T1 128x256x64 s3 w8").
      smoke_case: the interpreter case --smoke runs.
    """

    title: str
    tasks: tuple[str, ...]
    library: str
    grid: Callable
    bucket_args: Callable
    design_knobs: tuple[str, ...]
    label: Callable
    smoke_case: int


def interleaved(table: dict, per_design: list[list[dict]], label: Callable, max_configs: int) -> list[dict]:
    """Returns up to `max_configs` configs: the table's own first, then the designs' configs in
    turn (each design's first, then each one's second, ...), none twice."""
    configs, seen = [table], {label(table)}
    for config in itertools.chain.from_iterable(itertools.zip_longest(*per_design)):
        if config is not None and label(config) not in seen and len(configs) < max_configs:
            configs.append(config)
            seen.add(label(config))
    return configs


# ---- running one config (both phases) ------------------------------------------------------

def kernel_module(task_name: str):
    """Returns the task's baseline module, imported once per process from its file, with its
    own table (whatever `entry_with` put there before)."""
    if task_name not in _loaded:
        spec = importlib.util.spec_from_file_location(f"sweep_{task_name}", common.KERNELS_DIR / f"{task_name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[task_name] = (module, dict(module.CONFIGS))
    module, table = _loaded[task_name]
    module.CONFIGS = dict(table)
    return module


def case_inputs(task, case_index: int, cases, device: str):
    """Returns the case's inputs, keeping only the last case's in memory."""
    key = ("inputs", task.name, case_index)
    if key not in _loaded:
        for stale in [k for k in _loaded if k[0] == "inputs"]:
            del _loaded[stale]
        _loaded[key] = task.make_inputs(cases[case_index].params, SEED, device)
    return _loaded[key]


def entry_with(task, config: dict):
    """Returns the baseline's entry point, `config` now in every bucket of its table."""
    module = kernel_module(task.name)
    module.CONFIGS = {bucket: tuple(config.items()) for bucket in module.CONFIGS}
    return getattr(module, task.entry_point)


def warm(job: tuple) -> tuple:
    """Phase 1 in a worker: runs (task, case, config) once. Returns (job id, status, error, seconds)."""
    job_id, task_name, case_index, smoke, config = job
    started = time.perf_counter()
    try:
        task = registry.builtin().get(task_name)
        cases = task.interpreter_cases if smoke else task.cases
        args = case_inputs(task, case_index, cases, "cpu" if smoke else "cuda")
        entry_with(task, config)(*args)
        if not smoke:
            torch.cuda.synchronize()
        return job_id, "ok", "", time.perf_counter() - started
    except Exception as error:  # a config that does not compile or run is a result, not a crash
        return job_id, "failed", _error_text(error), time.perf_counter() - started


def _error_text(error: BaseException) -> str:
    return " ".join("".join(traceback.format_exception_only(type(error), error)).split())[-400:]


def bench_ms(fn, smoke: bool) -> tuple[float, str]:
    """Returns (median milliseconds of `fn`, how it was timed): on a GPU, do_bench of a CUDA
    graph of one call ("graph": replays, as the fitness harness times, so host-side set-up is
    not counted; "eager" if the call cannot be captured); under the interpreter, the median of
    three wall-clock runs ("wall")."""
    if smoke:
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            fn()
            runs.append((time.perf_counter() - started) * 1e3)
        return sorted(runs)[1], "wall"
    import triton.testing
    fn()
    torch.cuda.synchronize()
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
    except RuntimeError:
        return triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"), "eager"
    return triton.testing.do_bench(graph.replay, warmup=10, rep=40, return_mode="median"), "graph"


# ---- the two phases --------------------------------------------------------------------------

def compile_phase(rows: list[dict], jobs: list[tuple], workers: int, deadline: float, job_timeout_s: float,
                  run: Callable[[tuple], tuple] = warm) -> None:
    """Runs every job once through `run` (in `workers` processes, or here when 0) until
    `deadline`; fills rows as results come, in any order. A job with no result `job_timeout_s`
    after its worker took it up is recorded failed and its worker killed: the pool starts a
    fresh one in its place, so a compile that hangs costs its job, not a worker (and a core)
    for the rest of the phase: five hung warp-specialized compiles held 5 of an attention
    sweep's 14 workers to its phase-1 deadline (RESULTS.md §16)."""
    if workers == 0:
        results = (run(job) for job in jobs if time.monotonic() < deadline)
        for job_id, status, error, seconds in results:
            rows[job_id].update(status=status, error=error, run_s=round(seconds, 2))
        return
    spawn = multiprocessing.get_context("spawn")
    with spawn.Manager() as manager:
        taken_up = manager.dict()  # job id -> (time.time() its worker started it, the worker's pid)
        pool = spawn.Pool(workers)
        try:
            pending = {job[0]: pool.apply_async(_timed_run, (run, job, taken_up)) for job in jobs}
            while pending and time.monotonic() < deadline:
                started = dict(taken_up)  # one round trip to the manager per look
                for job_id, result in list(pending.items()):
                    if result.ready():
                        _, status, error, seconds = result.get()
                        rows[job_id].update(status=status, error=error, run_s=round(seconds, 2))
                        del pending[job_id]
                    elif job_id in started and time.time() - started[job_id][0] > job_timeout_s:
                        rows[job_id].update(status="failed", error=f"no result in {job_timeout_s:g} s: the "
                                                                    "worker died or hung")
                        del pending[job_id]
                        _kill_worker(started[job_id][1])
                time.sleep(POLL_S)
        finally:
            pool.terminate()
            pool.join()


def _kill_worker(pid: int) -> None:
    """Kills the pool worker `pid` if it is still this process's child (one that died is gone,
    and its pid may since belong to another process)."""
    if pid in {child.pid for child in multiprocessing.active_children()}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _timed_run(run: Callable[[tuple], tuple], job: tuple, taken_up) -> tuple:
    """`run(job)`, having noted in `taken_up` when and in which process it started."""
    taken_up[job[0]] = (time.time(), os.getpid())
    return run(job)


def time_phase(rows: list[dict], tasks: dict, smoke: bool, deadline: float) -> None:
    """Checks and times, case by case, every row that ran in phase 1, beside the torch op;
    each case gets an even share of the time left."""
    by_case: dict = {}
    for row in rows:
        by_case.setdefault((row["task"], row["case_index"]), []).append(row)
    for left, ((task_name, case_index), case_rows) in zip(range(len(by_case), 0, -1), by_case.items()):
        case_deadline = time.monotonic() + (deadline - time.monotonic()) / left
        try:
            case = _prepare_case(tasks[task_name], case_index, smoke)
        except Exception as error:  # the case's inputs, reference or torch op failed: its rows say so
            for row in case_rows:
                if row["status"] == "ok":
                    row.update(status="failed", error=f"case set-up: {_error_text(error)}")
            continue
        for row in case_rows:
            row.update(library_us=round(case["library_ms"] * 1e3, 2),
                       library_tflops=round(case["flops"] / case["library_ms"] / 1e9, 1))
            if row["status"] != "ok":
                continue
            if time.monotonic() > case_deadline:
                row["status"] = "not_run"
                continue
            _check_and_time(row, tasks[task_name], case, smoke)


def _prepare_case(task, case_index: int, smoke: bool) -> dict:
    """Returns the case's inputs, reference output, flops and the torch op's time."""
    from suite_bench import NATIVE
    cases = task.interpreter_cases if smoke else task.cases
    args = case_inputs(task, case_index, cases, "cpu" if smoke else "cuda")
    library_ms, _ = bench_ms(lambda: NATIVE.get(task.name, task.reference)(*args), smoke)
    return {"args": args, "expected": task.reference(*args), "flops": task.flops(cases[case_index].params),
            "library_ms": library_ms}


def _check_and_time(row: dict, task, case: dict, smoke: bool) -> None:
    try:
        entry = entry_with(task, row["config"])
        verdict = checking.compare_outputs([case["expected"]], [entry(*case["args"])], task.tolerance)
        row["max_abs_err"] = verdict.get("max_abs_err")
        if verdict["kind"] is not None:
            row.update(status=verdict["kind"], error=verdict.get("detail", "")[-400:])
            return
        ms, method = bench_ms(lambda: entry(*case["args"]), smoke)
        row.update(median_us=round(ms * 1e3, 2), tflops=round(case["flops"] / ms / 1e9, 1),
                   vs_library=round(case["library_ms"] / ms, 3), timed_by=method)
    except Exception as error:
        row.update(status="failed", error=_error_text(error))


def selected_cases(task, smoke: bool, family: Family, case_filter: str) -> list[int]:
    """Returns the indices of the cases to sweep: the smoke case, or those whose name holds one of
    `case_filter`'s comma-separated substrings."""
    if smoke:
        return [family.smoke_case]
    wanted = case_filter.split(",")
    return [i for i, case in enumerate(task.cases) if any(part in case.name for part in wanted)]


def plan(family: Family, tasks: dict, sms: int, max_configs: int, smoke: bool, case_filter: str = "",
         wide: bool = False) -> tuple[list[dict], list[tuple]]:
    """Returns (a row per task x case x config, phase 1's jobs: rank by rank, round-robin over cases)."""
    rows, ranked = [], []
    for task in tasks.values():
        module = kernel_module(task.name)
        cases = task.interpreter_cases if smoke else task.cases
        for case_index in selected_cases(task, smoke, family, case_filter):
            params = cases[case_index].params
            bucket = module._bucket(*family.bucket_args(params))
            configs = [dict(module.CONFIGS[bucket])] if smoke else family.grid(module, params, sms, max_configs, wide)
            for rank, config in enumerate(configs):
                row = {"task": task.name, "case": cases[case_index].name, "case_index": case_index,
                       "bucket": bucket, "source": "table" if rank == 0 else "grid", "label": family.label(config),
                       "config": config, "status": "not_run", "error": "", **config}
                ranked.append((rank, len(rows)))
                rows.append(row)
    jobs = [(i, rows[i]["task"], rows[i]["case_index"], smoke, rows[i]["config"]) for _, i in sorted(ranked)]
    return rows, jobs


# ---- tables --------------------------------------------------------------------------------

def best_rows(rows: list[dict], family: Family) -> dict:
    """Returns {(task, case): {"best": row, "table": row, "designs": {design: row}}} over timed rows."""
    found: dict = {}
    for row in rows:
        entry = found.setdefault((row["task"], row["case"]), {"best": None, "table": None, "designs": {}})
        if row["source"] == "table":
            entry["table"] = row
        if row.get("median_us") is None:
            continue
        design = " ".join(f"{k}={row[k]}" for k in family.design_knobs if k in row["config"])
        for slot, holder in (("best", entry), (design, entry["designs"])):
            if holder.get(slot) is None or row["median_us"] < holder[slot]["median_us"]:
                holder[slot] = row
    return found


def bucket_winners(rows: list[dict]) -> dict:
    """Returns {(task, bucket): (config, geomean vs the torch op, cases)}: per bucket, the config
    with the best geometric mean over the bucket's swept cases, among those timed on all of them."""
    by_bucket: dict = {}
    for row in rows:
        cases, timed = by_bucket.setdefault((row["task"], row["bucket"]), (set(), {}))
        cases.add(row["case"])
        if row.get("vs_library"):
            timed.setdefault(row["label"], (row["config"], {}))[1][row["case"]] = row["vs_library"]
    winners = {}
    for key, (cases, timed) in by_bucket.items():
        complete = [(math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios)), label, config)
                    for label, (config, ratios) in timed.items() if set(ratios) == cases]
        if complete:
            geomean, _, config = max(complete, key=lambda item: item[:2])
            winners[key] = (config, round(geomean, 3), len(cases))
    return winners


def table_entry(bucket: str, config: dict, module) -> str:
    """Returns a config as the line of `CONFIGS` that sets its bucket."""
    pairs = ", ".join(f'("{name}", {config[name]})' for name in module.KNOBS)
    return f'    "{bucket}": ({pairs}),'


def summary(rows: list[dict], environment: dict, family: Family) -> str:
    """Returns the markdown summary: best per case, per design, and the bucket winners as CONFIGS lines."""
    found = best_rows(rows, family)
    lib = family.library
    lines = [f"{family.title} sweep on {environment['device']} (torch {environment['torch']}, triton "
             f"{environment['triton']}), {environment['elapsed_s']} s.", "",
             f"| task | case | bucket | best config | us | TFLOP/s | {lib} us | {lib} TFLOP/s | vs {lib} "
             f"| table's config vs {lib} | timed / failed / not run |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_case_line(entry, [r for r in rows if (r["task"], r["case"]) == key]) for key, entry in found.items()]
    lines += ["", f"Best per design (vs {lib}):", "", f"| task | case | design | config | us | vs {lib} |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['case']} | {design} | {r['label']} | {r['median_us']} | {r['vs_library']}x |"
              for entry in found.values() for design, r in sorted(entry["designs"].items())]
    failures = sorted({(r["task"], r["label"], r["error"][:160]) for r in rows
                       if r["status"] not in ("ok", "not_run")})[:20]
    lines += ["", "Failures (first 20 distinct):", ""] + [f"- {t} {lab}: {err}" for t, lab, err in failures]
    lines += ["", f"Winners as CONFIGS entries (per bucket: best geomean vs {lib} over its swept cases):", "", "```"]
    lines += [f"# {task}: {geomean}x over {cases} case(s)\n" + table_entry(bucket, config, kernel_module(task))
              for (task, bucket), (config, geomean, cases) in bucket_winners(rows).items()]
    return "\n".join(lines + ["```", ""])


def _case_line(entry: dict, case_rows: list[dict]) -> str:
    """Returns one case's row of the summary table."""
    best, table, first = entry["best"], entry["table"], case_rows[0]
    counts = (f"{sum(r.get('median_us') is not None for r in case_rows)} / "
              f"{sum(r['status'] not in ('ok', 'not_run') for r in case_rows)} / "
              f"{sum(r['status'] == 'not_run' for r in case_rows)}")
    table_text = f"{table['vs_library']}x" if table.get("vs_library") else table["status"]
    timed = (best["label"], best["median_us"], best["tflops"], f"{best['vs_library']}x") if best else \
        ("none timed", "-", "-", "-")
    return (f"| {first['task']} | {first['case']} | {first['bucket']} | {timed[0]} | {timed[1]} | {timed[2]} "
            f"| {first.get('library_us')} | {first.get('library_tflops')} | {timed[3]} | {table_text} | {counts} |")


def fields(family: Family) -> tuple[str, ...]:
    """Returns the CSV columns: the row's identity, every knob of the family's tables, the results."""
    knobs = dict.fromkeys(name for task in family.tasks for name in kernel_module(task).KNOBS)
    return (*HEAD, *knobs, *TAIL)


def write(out: Path, rows: list[dict], environment: dict, family: Family) -> str:
    """Writes sweep.csv, best.json and summary.md under `out`; returns the summary."""
    columns = fields(family)
    with open(out / "sweep.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    public = lambda row: None if row is None else {k: row.get(k) for k in columns} | {"config": row["config"]}
    best = [{"task": task, "case": case, **{slot: public(entry[slot]) for slot in ("best", "table")},
             "designs": {d: public(r) for d, r in entry["designs"].items()}}
            for (task, case), entry in best_rows(rows, family).items()]
    (out / "best.json").write_text(json.dumps({"environment": environment, "cases": best}, indent=1))
    text = summary(rows, environment, family)
    (out / "summary.md").write_text(text)
    return text


def main(family: Family, argv=None, description: str = "") -> int:
    parser = argparse.ArgumentParser(description=description or family.title)
    parser.add_argument("out", help="output folder (created)")
    parser.add_argument("--tasks", default=",".join(family.tasks))
    parser.add_argument("--cases", default="", metavar="SUBSTRINGS",
                        help="only the cases whose name holds one of them (comma-separated)")
    parser.add_argument("--wide", action="store_true", help="the family's wider grid (for a focused run)")
    parser.add_argument("--max-seconds", type=float, default=240.0)
    parser.add_argument("--compile-share", type=float, default=0.5, help="phase 1's share of --max-seconds")
    parser.add_argument("--max-configs", type=int, default=48, help="configs per case, the table's included")
    parser.add_argument("--job-timeout", type=float, default=45.0, help="seconds to wait for a phase-1 job's result")
    parser.add_argument("--workers", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--smoke", action="store_true", help="interpreter, one small case, the table's config")
    args = parser.parse_args(argv)
    started = time.monotonic()
    names = args.tasks.split(",")[:1] if args.smoke else args.tasks.split(",")
    unknown = sorted(set(names) - set(family.tasks))
    if unknown:
        parser.error(f"unknown task(s) {unknown}; this sweep knows {list(family.tasks)}")
    tasks = {name: registry.builtin().get(name) for name in names}
    if not any(selected_cases(task, args.smoke, family, args.cases) for task in tasks.values()):
        parser.error(f"no case name holds {args.cases!r}; cases: "
                     f"{[case.name for task in tasks.values() for case in task.cases]}")
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # before a kernel module imports triton
    elif not torch.cuda.is_available():
        parser.error("no CUDA device: run with --smoke for the interpreter")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sms = 1 if args.smoke else torch.cuda.get_device_properties(0).multi_processor_count
    rows, jobs = plan(family, tasks, sms, args.max_configs, args.smoke, args.cases, args.wide)
    compile_phase(rows, jobs, 0 if args.smoke else args.workers, started + args.compile_share * args.max_seconds,
                  args.job_timeout)
    time_phase(rows, tasks, args.smoke, started + args.max_seconds)
    import triton
    environment = {"device": "interpreter (CPU)" if args.smoke else torch.cuda.get_device_name(0),
                   "sms": sms, "torch": torch.__version__, "triton": triton.__version__,
                   "max_seconds": args.max_seconds, "elapsed_s": round(time.monotonic() - started, 1),
                   "configs": len(rows), "cases": args.cases, "wide": args.wide}
    print(write(out, rows, environment, family))
    return 0
