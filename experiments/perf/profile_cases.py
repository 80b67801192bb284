"""Why a baseline is slower than torch.compile on a case: both sides profiled, reasons by rule.

Per (task, case) a child process builds the baseline and torch.compile (default mode) of the op
torch_baselines.py times (cuBLAS, SDPA or the task's reference), warms both, and profiles a call
of each: under Nsight Compute when an `ncu` runs and reads counters (both calls between
cudaProfilerStart/Stop, split at a marker kernel), else under torch.profiler (`profile_reading`
says what each gives). A parallel warm phase fills Triton's and inductor's caches first; no
child reuses inductor's autotuning choices, so each picks its configs alone on the device.
Each child has its own time limit: a failing case is recorded and the rest go on. The reason
column is what `profile_reading.RULES` find. --smoke: one interpreter case, wall clock, no
profiler. Writes OUT/summary.md (printed), profile.csv (a row per case x side), profile.json
(every kernel) after each case, and each child's log under OUT/logs.

    python experiments/perf/profile_cases.py OUT [--cases "row_sum:4096x4096 fp32;..."] [--max-seconds 300]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PERF = Path(__file__).resolve().parent
sys.path[:0] = [str(PERF.parents[1]), str(PERF)]

import profile_reading as reading  # noqa: E402

DEFAULT_CASES = (
    ("batched_matmul", "8x2049x2049x129 fp16"), ("bias_gelu", "16384x3001 fp16"),
    ("cumsum", "65537x257 fp32"), ("flash_attention", "B=1 H=32 S=4097 fp16"),
    ("flip2d", "16385x129 fp32"), ("matmul", "5000x3000x2000 fp16"),
    ("matmul", "4097x4097x4097 fp16"), ("row_argmax", "4096x4096 fp32"),
    ("row_sum", "4096x4096 fp32"), ("row_sum", "8192x5000 fp16"), ("row_sum", "1024x65537 fp16"))
"""The cases below 0.9x of torch.compile default on an H100 (RESULTS.md §11)."""
SMOKE_CASES = (("row_sum", "9x1000 fp32"),)
SIDES = ("ours", "compile")
COLUMNS = ("task", "case", "side", "profiler", "status", "error", *reading.SIDE_FIELDS, "torch_op", "model_bytes", "reason")


def _error_text(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())[-400:]


# ---- the child: one case, both sides ---------------------------------------------------------

def child_main(spec: dict) -> None:
    """Builds and warms both sides of one case, profiles them with spec["profiler"], and writes
    {"device", "sides": {side: {"status", "error" | "kernels" | "wall_us"}}} to spec["result"]."""
    import torch
    import torch._inductor.config

    torch._inductor.config.autotune_local_cache = False  # each child autotunes alone on the device
    import kernel_sweep
    import suite_bench

    from benchmarks import registry

    task = registry.builtin().get(spec["task"])
    device = "cpu" if spec["smoke"] else "cuda"
    [case] = [c for c in task.cases_for("interpreter" if spec["smoke"] else "cuda") if c.name == spec["case"]]
    inputs = task.make_inputs(case.params, kernel_sweep.SEED, device)
    makers = {"ours": lambda: getattr(kernel_sweep.kernel_module(task.name), task.entry_point),
              "compile": lambda: suite_bench.compiled(suite_bench.NATIVE.get(task.name, task.reference), "default")}
    result, ready = {"device": _device_facts(spec["smoke"]), "sides": {}}, {}
    for side, make in makers.items():
        try:
            fn = make()
            for _ in range(2):  # compiles, autotunes, then one steady call
                fn(*inputs)
            _sync(spec["smoke"])
            ready[side] = lambda fn=fn: fn(*inputs)
            result["sides"][side] = {"status": "ok"}
        except Exception as error:  # this side is recorded failed; the other is still profiled
            result["sides"][side] = {"status": "failed", "error": _error_text(error)}
    PROFILERS[spec["profiler"]](ready, result, spec)
    Path(spec["result"]).write_text(json.dumps(result))


def _sync(smoke: bool) -> None:
    if not smoke:
        import torch
        torch.cuda.synchronize()


def _device_facts(smoke: bool) -> dict:
    import torch
    import triton

    from fitness import device as device_lib

    device = device_lib.detect("interpreter" if smoke else "cuda")
    return {"name": device.name, "peak_bandwidth_gbs": device.peak_bandwidth_gbs, "llc_bytes": device.llc_bytes,
            "torch": torch.__version__, "triton": triton.__version__}


def _median_run(calls: int, run, size):
    """Returns the run of median `size` among `calls` runs of `run()`."""
    return sorted((run() for _ in range(calls)), key=size)[calls // 2]


def _profile_wall(ready: dict, result: dict, spec: dict) -> None:
    """No profiler: the median wall time of a call per side (the plumbing, for --smoke)."""
    def run(call) -> float:
        started = time.perf_counter()
        call()
        _sync(spec["smoke"])
        return (time.perf_counter() - started) * 1e6

    for side, call in ready.items():
        result["sides"][side]["wall_us"] = _median_run(spec["calls"], lambda: run(call), float)


def _profile_ncu(ready: dict, result: dict, spec: dict) -> None:
    """One call per side inside cudaProfilerStart/Stop (ncu --profile-from-start off), the
    marker kernel between them; ncu prints the counters, the parent splits them."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for side in SIDES:
        if side in ready:
            ready[side]()
        if side == "ours":
            torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def _profile_torch(ready: dict, result: dict, spec: dict) -> None:
    """Per side, the kernels of the median (by kernel time) of `calls` calls, each alone in a
    torch.profiler session after an L2 flush."""
    import torch

    flush = torch.empty(max(2 * result["device"]["llc_bytes"], 64 << 20), dtype=torch.int8, device="cuda")

    def run(call) -> list[dict]:
        flush.zero_()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as session:
            call()
            torch.cuda.synchronize()
        with tempfile.TemporaryDirectory() as folder:
            session.export_chrome_trace(f"{folder}/trace.json")
            return reading.kineto_kernels(json.loads(Path(f"{folder}/trace.json").read_text()))

    for side, call in ready.items():
        result["sides"][side]["kernels"] = _median_run(spec["calls"], lambda: run(call),
                                                       lambda kernels: sum(k["time_us"] for k in kernels))


PROFILERS = {"none": _profile_wall, "ncu": _profile_ncu, "torch": _profile_torch}


# ---- the parent: children, time limits, the ncu fallback -------------------------------------

class CollectedNothing(RuntimeError):
    """The child ran the case but its profiler recorded no kernel (ncu without access to the
    counters or with a metric it lacks; torch.profiler without CUPTI)."""


FALLBACK = {"ncu": "torch", "torch": "none"}
"""The profiler to use instead of one that collected nothing, for that case and the rest."""


def find_ncu(explicit: str | None) -> tuple[str, str] | None:
    """Returns (path, version line) of an ncu that runs: `explicit`, else on PATH or in CUDA's usual folders."""
    candidates = [explicit] if explicit else [shutil.which("ncu"), *sorted(glob.glob("/usr/local/cuda*/bin/ncu")),
                                              *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))]
    for path in filter(None, candidates):
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return path, (done.stdout.strip().splitlines() or ["?"])[-1]
    return None


def run_child(argv: list[str], env: dict, timeout_s: float, log: Path) -> tuple[str, str]:
    """Runs `argv` in its own session, its output to `log`. Returns (status, error): "ok",
    "failed" (the exit status and the log's tail) or "timeout" (killed with its process group)."""
    with open(log, "w") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = process.wait(timeout=max(timeout_s, 0.1))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            return "timeout", f"killed after {timeout_s:.0f} s (--case-timeout-s or --max-seconds)"
    if code != 0:
        return "failed", f"exit status {code}: " + " ".join(log.read_text()[-600:].split())
    return "ok", ""


def child_argv(spec: dict) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]


def child_env(smoke: bool, compile_threads: int) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS=str(compile_threads), PYTHONUNBUFFERED="1")
    if smoke:
        env["TRITON_INTERPRET"] = "1"
    return env


def ncu_argv(state: dict) -> list[str]:
    return [state["ncu"], "--target-processes", "all", "--profile-from-start", "off", "--csv",
            "--print-units", "base", "--metrics", ",".join(state["metrics"])]


def warm(pairs: list, args, logs: Path, deadline: float) -> dict:
    """Runs every case's child once without a profiler, --warm-workers at a time, so the
    profiled children find Triton's and inductor's caches full. Returns {status: count}."""
    env = child_env(args.smoke, max(1, (os.cpu_count() or 1) // args.warm_workers))

    def one(index: int, task, case) -> str:
        left_s = min(args.case_timeout_s, deadline - time.monotonic())
        if left_s < 1:
            return "not_run"
        spec = {"task": task.name, "case": case.name, "smoke": args.smoke, "profiler": "none", "calls": 1,
                "result": str(logs / f"warm{index}.json")}
        return run_child(child_argv(spec), env, left_s, logs / f"warm{index}.log")[0]

    with concurrent.futures.ThreadPoolExecutor(args.warm_workers) as pool:
        statuses = [future.result() for future in [pool.submit(one, i, *pair) for i, pair in enumerate(pairs)]]
    return {status: statuses.count(status) for status in sorted(set(statuses))}


def profile_case(index: int, task, case, state: dict, args, logs: Path, deadline: float) -> dict:
    """Returns the case's record from one child under the current profiler; raises
    CollectedNothing when the child ran and its profiler recorded no kernel."""
    profiler = state["profiler"]
    spec = {"task": task.name, "case": case.name, "smoke": args.smoke, "profiler": profiler, "calls": args.calls,
            "result": str(logs / f"case{index}-{profiler}.json")}
    log, result = logs / f"case{index}-{profiler}.log", Path(spec["result"])
    result.unlink(missing_ok=True)  # a retry's child must not find the last one's
    argv = (ncu_argv(state) if profiler == "ncu" else []) + child_argv(spec)
    status, error = run_child(argv, child_env(args.smoke, 1), min(args.case_timeout_s, deadline - time.monotonic()), log)
    text = log.read_text()
    ncu_errors = [line[:300] for line in text.splitlines() if line.startswith("==ERROR==")] if profiler == "ncu" else []
    if not result.exists():  # with a result, the child did its work: a failing exit is ncu's own
        if status == "failed" and any("metric" in line.lower() for line in ncu_errors):
            raise CollectedNothing(ncu_errors[0])  # ncu refused its metrics before starting the child
        return unmeasured(task, case, profiler, "failed" if status == "ok" else status,
                          error or "the child exited 0 without writing its result")
    child = json.loads(result.read_text())
    if profiler == "ncu":
        kernels = reading.ncu_kernels(text)
        if not kernels:
            raise CollectedNothing(ncu_errors[0] if ncu_errors else f"ncu printed no kernel rows ({error or 'exit 0'})")
        by_side = reading.split_at_marker(kernels)
    else:
        by_side = {side: child["sides"][side].get("kernels") for side in SIDES}
        if profiler == "torch" and not any(by_side.values()):
            raise CollectedNothing("torch.profiler recorded no device kernel on either side")
    return case_record(task, case, profiler, child, by_side)


def unmeasured(task, case, profiler: str, status: str, error: str) -> dict:
    return {"task": task.name, "case": case.name, "profiler": profiler, "status": status, "error": error,
            "sides": {}, "reason": f"{status}: {error}", "model_bytes": float(task.bytes(case.params))}


def case_record(task, case, profiler: str, child: dict, by_side: dict) -> dict:
    """Returns the record of a case the child ran: each side's numbers (or why none), the reason."""
    from torch_baselines import TORCH_OPS

    model_bytes = float(task.bytes(case.params))
    sides = {}
    for side in SIDES:
        reported = child["sides"][side]
        if reported["status"] != "ok":
            sides[side] = {"status": "failed", "error": reported["error"]}
            continue
        try:
            numbers = reading.summarize(by_side[side], reported.get("wall_us"), model_bytes,
                                        child["device"]["peak_bandwidth_gbs"])
            sides[side] = {"status": "ok", "error": "", **numbers, "kernel_list": by_side[side]}
        except ValueError as problem:
            sides[side] = {"status": "failed", "error": str(problem)}
    failed = [f"{side}: {sides[side]['error']}" for side in SIDES if sides[side]["status"] != "ok"]
    return {"task": task.name, "case": case.name, "profiler": profiler, "status": "failed" if failed else "ok",
            "error": "; ".join(failed), "torch_op": TORCH_OPS.get(task.name, "reference"),
            "model_bytes": model_bytes, "device": child["device"], "sides": sides,
            "reason": "failed: " + "; ".join(failed) if failed else reading.reason(sides["ours"], sides["compile"], profiler)}


def fall_back(state: dict, why: str) -> None:
    """After a profiler collected nothing: ncu retries once without its extra metrics (unless
    the counters are off limits), then FALLBACK names the profiler for this case and the rest."""
    extras = [m for m in state["metrics"] if m in reading.NCU_EXTRA_METRICS]
    if state["profiler"] == "ncu" and extras and "ERR_NVGPUCTRPERM" not in why:
        state["metrics"] = list(reading.NCU_METRICS)
        state["notes"].append(f"ncu collected nothing with {', '.join(extras)} ({why}); retried without them")
    else:
        state["notes"].append(f"{state['profiler']} collected nothing ({why}); {FALLBACK[state['profiler']]} from then on")
        state["profiler"] = FALLBACK[state["profiler"]]


def profile_all(pairs: list, state: dict, args, logs: Path, deadline: float, written) -> list[dict]:
    """Profiles the cases in order, each in its own child; calls `written(records)` after each."""
    records = []
    for index, (task, case) in enumerate(pairs):
        record = None
        while record is None:
            if time.monotonic() >= deadline - 1:
                record = unmeasured(task, case, state["profiler"], "not_run", "out of time (--max-seconds)")
                continue
            try:
                record = profile_case(index, task, case, state, args, logs, deadline)
            except CollectedNothing as why:
                fall_back(state, str(why))
            except Exception as error:  # a case this script cannot read is recorded; the rest go on
                record = unmeasured(task, case, state["profiler"], "failed", _error_text(error))
        records.append(record)
        written(records)
    return records


# ---- tables and files ------------------------------------------------------------------------

def _pair(record: dict, key: str, spec: str, scale: float = 1.0) -> str:
    values = [record["sides"].get(side, {}).get(key) for side in SIDES]
    return " / ".join("-" if v is None else format(v * scale if scale != 1.0 else v, spec) for v in values)


LEGEND = {
    "ncu": "Nsight Compute counters at its locked clocks, caches flushed before each kernel; occupancy = achieved",
    "torch": "torch.profiler (CUPTI) durations after an L2 flush; DRAM % = the task's byte model / time / datasheet "
             "bandwidth; occupancy = CUPTI's estimate; kernels include copies and memsets",
    "none": "no profiler: wall-clock time of a call (the plumbing only)"}


def markdown(records: list[dict], environment: dict) -> str:
    """Returns the summary: one row per case, each cell ours / compile."""
    lines = [f"Profiles of {len(records)} case(s) on {environment['device']} (torch {environment['torch']}, triton "
             f"{environment['triton']}), {environment['elapsed_s']} s; ncu: {environment['ncu'] or 'not found'}.",
             *[f"- note: {note}" for note in environment["notes"]],
             *[f"- {name}: {text}" for name, text in LEGEND.items() if any(r["profiler"] == name for r in records)],
             "", "Cells are ours / torch.compile default; occupancy, regs, grid are each side's main (longest) kernel's.",
             "", "| task | case | profiler | kernels | time us | DRAM MB | DRAM % | SM % | occupancy % | regs | grid "
                 "| main kernel | reason |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['task']} | {r['case']} | {r['profiler']} | {_pair(r, 'kernels', '.0f')} "
                     f"| {_pair(r, 'time_us', '.1f')} | {_pair(r, 'dram_bytes', '.1f', 1e-6)} "
                     f"| {_pair(r, 'dram_pct', '.0f')} | {_pair(r, 'sm_pct', '.0f')} "
                     f"| {_pair(r, 'occupancy_pct', '.0f')} | {_pair(r, 'registers', '.0f')} "
                     f"| {_pair(r, 'grid', '.0f')} | {_pair(r, 'main_kernel', 's')} | {r['reason']} |")
    return "\n".join(lines) + "\n"


def csv_rows(records: list[dict]) -> list[dict]:
    """Returns a row per case x side (a case with no side measured: one row, side empty)."""
    rows = []
    for r in records:
        shared = {"task": r["task"], "case": r["case"], "profiler": r["profiler"], "torch_op": r.get("torch_op"),
                  "model_bytes": r["model_bytes"], "reason": r["reason"]}
        sides = r["sides"] or {"": {"status": r["status"], "error": r["error"]}}
        rows += [shared | {key: numbers.get(key) for key in COLUMNS if key in numbers} | {"side": side}
                 for side, numbers in sides.items()]
    return rows


def write_outputs(out: Path, records: list[dict], environment: dict) -> str:
    """Writes summary.md, profile.csv and profile.json under `out`; returns the summary."""
    text = markdown(records, environment)
    (out / "summary.md").write_text(text)
    with open(out / "profile.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(csv_rows(records))
    (out / "profile.json").write_text(json.dumps({"environment": environment, "cases": records}, indent=1))
    return text


def environment_of(records: list[dict], state: dict, started: float, extra: dict) -> dict:
    device = next((r["device"] for r in records if r.get("device")), {})
    return {"device": device.get("name", "unknown"), "torch": device.get("torch", "?"),
            "triton": device.get("triton", "?"), "ncu": state.get("ncu_version"), "notes": state["notes"],
            "elapsed_s": round(time.monotonic() - started, 1), **extra}


# ---- the command -----------------------------------------------------------------------------

def resolve_cases(parser, text: str, smoke: bool) -> list[tuple]:
    """Returns [(task, case)] named by "task:case;task:case" (the defaults when empty); an
    unknown task or case is a usage error listing the choices."""
    from benchmarks import registry

    suite = registry.builtin()
    wanted = ([item.split(":", 1) for item in text.split(";") if item.strip()] if text
              else SMOKE_CASES if smoke else DEFAULT_CASES)
    pairs = []
    for item in wanted:
        if len(item) != 2:
            parser.error(f"--cases item {item[0]!r} is not TASK:CASE (items are separated by ';')")
        name, case_name = (part.strip() for part in item)
        if name not in suite:
            parser.error(f"unknown task {name!r}; tasks: {', '.join(t.name for t in suite.tasks())}")
        task = suite.get(name)
        cases = {c.name: c for c in task.cases_for("interpreter" if smoke else "cuda")}
        if case_name not in cases:
            parser.error(f"task {name} has no case {case_name!r}; its cases: {'; '.join(cases)}")
        pairs.append((task, cases[case_name]))
    return pairs


def choose_profiler(parser, args) -> dict:
    """Returns the profiling state: the profiler (ncu when one runs, else torch.profiler;
    none under --smoke), ncu's path, version and metrics, and notes for the summary."""
    state = {"profiler": "none", "ncu": None, "ncu_version": None, "notes": [],
             "metrics": [*reading.NCU_METRICS, *reading.NCU_EXTRA_METRICS]}
    if args.smoke:
        return state | {"notes": ["--smoke: the interpreter, wall-clock time, no profiler"]}
    found = find_ncu(args.ncu) if args.profiler in ("auto", "ncu") else None
    if args.profiler == "ncu" and found is None:
        parser.error(f"--profiler ncu, but no ncu runs ({args.ncu or 'PATH, /usr/local/cuda*/bin, /opt/nvidia'})")
    if found:
        return state | {"profiler": "ncu", "ncu": found[0], "ncu_version": found[1]}
    notes = [] if args.profiler == "torch" else ["no ncu found (PATH, /usr/local/cuda*/bin, /opt/nvidia/"
                                                 "nsight-compute): torch.profiler"]
    return state | {"profiler": "torch", "notes": notes}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:  # one case's child: its spec, from the parent
        child_main(json.loads(argv[1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output folder (created)")
    parser.add_argument("--cases", default="", help='"task:case;task:case" (default: the 11 cases below 0.9x)')
    parser.add_argument("--profiler", choices=("auto", "ncu", "torch"), default="auto")
    parser.add_argument("--ncu", help="path of ncu (default: PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-compute)")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="stop everything after this long")
    parser.add_argument("--case-timeout-s", type=float, default=90.0, help="kill a child after this long")
    parser.add_argument("--warm-share", type=float, default=0.4, help="the warm phase's share of --max-seconds")
    parser.add_argument("--warm-workers", type=int, default=max(1, min(8, (os.cpu_count() or 2) - 2)),
                        help="warm children at once (0: no warm phase)")
    parser.add_argument("--calls", type=int, default=3, help="profiled calls per side under torch.profiler")
    parser.add_argument("--smoke", action="store_true", help="one interpreter case, wall clock, no profiler")
    args = parser.parse_args(argv)
    started = time.monotonic()
    deadline = started + args.max_seconds
    pairs = resolve_cases(parser, args.cases, args.smoke)
    import torch
    if not args.smoke and not torch.cuda.is_available():
        parser.error("no CUDA device: run with --smoke for the interpreter")
    state = choose_profiler(parser, args)
    out = Path(args.out)
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    warmed = (warm(pairs, args, logs, started + args.warm_share * args.max_seconds)
              if args.warm_workers and not args.smoke else {})
    extra = {"warm": warmed, "max_seconds": args.max_seconds}
    records = profile_all(pairs, state, args, logs, deadline,
                          lambda done: write_outputs(out, done, environment_of(done, state, started, extra)))
    print(write_outputs(out, records, environment_of(records, state, started, extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
