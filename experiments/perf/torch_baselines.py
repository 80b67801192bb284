"""Torch's own implementation of every built-in task, timed the way candidates are timed.

What it answers: per task and case, how fast is what a user already has (the PyTorch op in
eager mode, under torch.compile's default mode and under max-autotune-no-cudagraphs), with
the protocol that times candidates and baselines (`fitness.measure.timing.bench`: L2 flushed before
every run, CUDA-graph replays when the call can be captured, input buffers refilled with other
values before every run), so its medians sit beside a campaign's latency_us. `evo report DIR`
joins this file with the campaign's best kernels (it looks for DIR/torch_timings.parquet).

Which op is timed: the task's reference, except where the reference upcasts to fp32 to be an
exact ground truth (matmul, batched_matmul, flash_attention): timing that would make torch
look ten times slower than it is, so there it is what a user calls in the input dtype
(cuBLAS matmul/bmm, fused causal SDPA: `suite_bench.NATIVE`), named in `torch_op`.

How it stays honest and inside its time box:
- One subprocess per (task, mode) job, at most --jobs at once. Preparing inputs and compiling
  (autotuning benchmarks on the GPU too) hold a shared file lock, timing holds it exclusively:
  compiles overlap each other, nothing overlaps a timed run.
- A job that spends more than --case-timeout-s on one case is killed with its process group
  (compile workers included), the case is recorded "timeout", the job restarts after it.
- At --max-seconds every job still running is killed; what never ran is recorded "not_run".
  Jobs start in mode order (eager, default, max-autotune), so the cheap modes finish first.

Columns, one row per task x case x mode: task, case, mode, device, backend, status (ok,
failed, timeout, not_run), error, median_us, p20_us, p80_us, runs, method (graph, events,
wall), compile_s, torch_op (reference, cublas, sdpa), bound (memory, compute, or null), flops,
bytes, floor_us (the datasheet roofline time, as candidates' roofline_fraction uses),
roofline_fraction (floor_us / median_us), copy_floor_us (bytes at the copy bandwidth measured
here), copy_gbs, torch_version, triton_version, measured_at.

    python experiments/perf/torch_baselines.py --out results/RUN/torch_timings.parquet \
        [--tasks softmax,matmul] [--modes eager,default,max-autotune-no-cudagraphs] \
        [--max-cases N] [--jobs 4] [--case-timeout-s 60] [--max-seconds 150]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

MODES = ("eager", "default", "max-autotune-no-cudagraphs")
TORCH_OPS = {"matmul": "cublas", "batched_matmul": "cublas", "flash_attention": "sdpa"}
"""Tasks timed through `suite_bench.NATIVE` instead of their reference, and what that is."""
INPUT_SEED = 1234
POLL_S = 0.2


# ---- the job: one task in one mode, in its own process --------------------------------------

def _emit(event: dict) -> None:
    """One JSON line to the parent (stdout is the job's channel; logs go to stderr)."""
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _failure(error: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(error), error)).strip()[-800:]


def run_job(spec: dict) -> None:
    """Prepares every case (inputs, the first call: compilation) under the shared lock, then
    times every prepared case under the exclusive lock, announcing each step to the parent."""
    import torch
    from suite_bench import NATIVE

    from benchmarks import registry
    from fitness import device as device_lib
    from fitness.measure import timing

    device = device_lib.detect(spec["device"])
    task = registry.builtin().get(spec["task"])
    cases = task.cases_for(device.backend)
    torch_fn = NATIVE.get(task.name, task.reference)
    mode = spec["mode"]
    fn = torch_fn if mode == "eager" else torch.compile(
        torch_fn, mode=None if mode == "default" else mode, dynamic=False)
    sync = torch.cuda.synchronize if device.backend != "interpreter" else (lambda: None)
    prepared = {}
    with open(spec["lock"], "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        for index in spec["cases"]:
            _emit({"event": "start", "case": index, "stage": "prepare"})
            try:
                inputs = task.make_inputs(cases[index].params, INPUT_SEED, device.torch_device)
                buffers, refill = timing.refilled_copies(inputs)
                started = time.perf_counter()
                fn(*buffers)
                sync()
                prepared[index] = (refill, buffers, time.perf_counter() - started)
            except Exception as error:  # a mode that cannot compile this case: say so, go on
                _emit({"event": "result", "case": index, "status": "failed",
                       "error": _failure(error)})
        fcntl.flock(lock, fcntl.LOCK_UN)
        _emit({"event": "wait"})  # for the exclusive lock: no case's clock runs meanwhile
        fcntl.flock(lock, fcntl.LOCK_EX)
        for index, (refill, buffers, first_call_s) in prepared.items():
            _emit({"event": "start", "case": index, "stage": "time"})
            try:
                [stats] = timing.bench([lambda: fn(*buffers)], device, None, refill)
            except Exception as error:
                _emit({"event": "result", "case": index, "status": "failed",
                       "error": _failure(error)})
                continue
            _emit({"event": "result", "case": index, "status": "ok",
                   "compile_s": first_call_s if mode != "eager" else 0.0,
                   **dataclasses.asdict(stats)})


# ---- the parent: jobs, guards, rows -----------------------------------------------------------

@dataclasses.dataclass
class Job:
    """A (task, mode) job and the cases it has still to do."""

    task: str
    mode: str
    cases: list[int]


@dataclasses.dataclass
class Running:
    """A started job: its process, its event file, and the case it is working on."""

    job: Job
    process: subprocess.Popen
    events: Path
    log: Path
    lines_read: int = 0
    case: int | None = None
    stage: str = ""
    case_started: float = 0.0


class Scheduler:
    """Runs jobs at most `jobs` at a time, enforces the per-case and the overall limit, and
    collects each (task, case, mode)'s measurement or the reason there is none."""

    def __init__(self, args, work: Path, lock: Path):
        self.args, self.work, self.lock = args, work, lock
        self.results: dict[tuple[str, int, str], dict] = {}
        self.started = 0

    def _start(self, job: Job) -> Running:
        self.started += 1
        events = self.work / f"job{self.started}.jsonl"
        log = self.work / f"job{self.started}.log"
        spec = {"task": job.task, "mode": job.mode, "cases": job.cases,
                "device": self.args.device, "lock": str(self.lock)}
        env = dict(os.environ)
        env.setdefault("TORCHINDUCTOR_COMPILE_THREADS",
                       str(max(1, (os.cpu_count() or 1) // self.args.jobs)))
        with open(events, "w") as out, open(log, "w") as err:
            process = subprocess.Popen([sys.executable, __file__, "--job", json.dumps(spec)],
                                       stdout=out, stderr=err, env=env, start_new_session=True)
        return Running(job, process, events, log)

    def _read(self, running: Running) -> None:
        lines = running.events.read_text().split("\n")[:-1]  # only whole lines
        for line in lines[running.lines_read:]:
            event = json.loads(line)
            if event["event"] == "start":
                running.case, running.stage = event["case"], event["stage"]
                running.case_started = time.monotonic()
            elif event["event"] == "wait":
                running.case = None
            else:
                key = (running.job.task, event["case"], running.job.mode)
                self.results[key] = {k: v for k, v in event.items() if k not in ("event", "case")}
                running.case = None
        running.lines_read = len(lines)

    def _record(self, running: Running, index: int, status: str, error: str) -> None:
        self.results[(running.job.task, index, running.job.mode)] = {"status": status,
                                                                     "error": error}

    def _left(self, running: Running) -> list[int]:
        return [i for i in running.job.cases
                if (running.job.task, i, running.job.mode) not in self.results]

    def _kill(self, running: Running) -> None:
        try:
            os.killpg(running.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        running.process.wait()

    def run(self, jobs: list[Job]) -> None:
        queue, active = collections.deque(jobs), []
        deadline = time.monotonic() + self.args.max_seconds
        while queue or active:
            while queue and len(active) < self.args.jobs:
                active.append(self._start(queue.popleft()))
            time.sleep(POLL_S)
            now = time.monotonic()
            for running in list(active):
                self._read(running)
                exited = running.process.poll() is not None
                overdue = (running.case is not None
                           and now - running.case_started > self.args.case_timeout_s)
                if not (exited or overdue or now > deadline):
                    continue
                if not exited:
                    self._kill(running)
                    self._read(running)
                active.remove(running)
                if now > deadline:
                    continue  # what is left is recorded not_run at the end
                if overdue and running.case is not None:
                    self._record(running, running.case, "timeout",
                                 f"killed after {self.args.case_timeout_s:g} s on this case "
                                 f"(--case-timeout-s), while it was at {running.stage}")
                else:
                    self._blame_exit(running)
                left = self._left(running)
                if left:
                    queue.appendleft(Job(running.job.task, running.job.mode, left))
            if now > deadline:
                break

    def _blame_exit(self, running: Running) -> None:
        """A job that ended leaving cases without a result: the case it was on fails; if it
        was on none (an import error, a crash between cases) all of them do, or it would be
        restarted forever."""
        if not self._left(running):
            return
        tail = running.log.read_text()[-600:].strip()
        error = f"job exited with status {running.process.returncode}: {tail}"
        for index in ([running.case] if running.case is not None else self._left(running)):
            self._record(running, index, "failed", error)


# ---- the rows and the file --------------------------------------------------------------------

def measure_copy_gbs(device) -> float | None:
    """Returns the device-to-device copy bandwidth measured here (None off a GPU)."""
    if not device.timing_meaningful:
        return None
    import torch
    from suite_bench import measure_ceilings

    copy_gbs = measure_ceilings(device)["copy_gbs"]
    torch.cuda.empty_cache()  # the jobs need the memory, and the parent holds its context
    return copy_gbs


def rows_for(tasks, device, modes, max_cases: int, results: dict, copy_gbs: float | None,
             versions: dict) -> list[dict]:
    """Returns one row per task x case x mode: what is known of the case without timing it
    (its work, its floors) and what the jobs measured, or why they did not."""
    rows = []
    for task in tasks:
        tags = set(task.tags)
        bound = ("memory" if "memory-bound" in tags
                 else "compute" if "compute-bound" in tags else None)
        for index, case in enumerate(task.cases_for(device.backend)[:max_cases]):
            flops, bytes_moved = float(task.flops(case.params)), float(task.bytes(case.params))
            dtype = str(case.params.get("dtype", "float32"))
            floor_s = (device.roofline_s(flops, bytes_moved, dtype)
                       if device.timing_meaningful else None)
            floor_us = floor_s * 1e6 if floor_s is not None else None
            for mode in modes:
                result = results.get((task.name, index, mode),
                                     {"status": "not_run", "error": "out of time (--max-seconds)"})
                median_us = result.get("median_us")
                rows.append({
                    "task": task.name, "case": case.name, "mode": mode, "device": device.name,
                    "backend": device.backend, "status": result["status"],
                    "error": result.get("error"), "median_us": median_us,
                    "p20_us": result.get("p20_us"), "p80_us": result.get("p80_us"),
                    "runs": result.get("runs"), "method": result.get("method"),
                    "compile_s": result.get("compile_s"),
                    "torch_op": TORCH_OPS.get(task.name, "reference"), "bound": bound,
                    "flops": flops, "bytes": bytes_moved, "floor_us": floor_us,
                    "roofline_fraction": floor_us / median_us if floor_us and median_us else None,
                    "copy_floor_us": bytes_moved / (copy_gbs * 1e3) if copy_gbs else None,
                    "copy_gbs": copy_gbs, **versions,
                })
    return rows


def kept_from(earlier: Path, rows: list[dict], device_name: str) -> list[dict]:
    """Returns `rows` with the earlier file's ok rows on the same device in place of rows
    that are not ok, plus the earlier rows of (task, case, mode)s this run did not try."""
    import pyarrow.parquet as pq

    def key(row: dict) -> tuple:
        return row["task"], row["case"], row["mode"]

    merged = {key(row): row for row in pq.read_table(earlier).to_pylist()
              if row["device"] == device_name}
    for row in rows:
        if row["status"] == "ok" or merged.get(key(row), {}).get("status") != "ok":
            merged[key(row)] = row
    return list(merged.values())


def write_parquet(rows: list[dict], out: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    text, number = pa.string(), pa.float64()
    schema = pa.schema([(name, text) for name in (
        "task", "case", "mode", "device", "backend", "status", "error")]
        + [(name, number) for name in ("median_us", "p20_us", "p80_us")]
        + [("runs", pa.int64()), ("method", text), ("compile_s", number), ("torch_op", text),
           ("bound", text)]
        + [(name, number) for name in ("flops", "bytes", "floor_us", "roofline_fraction",
                                       "copy_floor_us", "copy_gbs")]
        + [(name, text) for name in ("torch_version", "triton_version", "measured_at")])
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        help="Parquet file to write (e.g. RUN/torch_timings.parquet)")
    parser.add_argument("--tasks", default="", help="comma list of built-in tasks (default: all)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma list of {', '.join(MODES)}")
    parser.add_argument("--max-cases", type=int, default=100, help="the first N cases of each task")
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--jobs", type=int, default=4, help="jobs (processes) at once")
    parser.add_argument("--case-timeout-s", type=float, default=60.0,
                        help="kill a job that spends longer than this on one case")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="stop everything after this long; what did not run says so")
    parser.add_argument("--keep-from", type=Path,
                        help="an earlier file of this script: its ok rows on this device fill "
                             "the (task, case, mode)s this run did not measure (a second call "
                             "that adds max-autotune to a first one's eager and default)")
    parser.add_argument("--job", help=argparse.SUPPRESS)  # a job's spec, from the parent
    args = parser.parse_args(argv)
    if args.job:
        run_job(json.loads(args.job))
        return 0
    if args.out is None:
        parser.error("--out is required")
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown modes {unknown}; expected some of {', '.join(MODES)}")

    import torch
    import triton

    from benchmarks import registry
    from fitness import device as device_lib

    device = device_lib.detect(args.device)
    suite = registry.builtin()
    tasks = [suite.get(name) for name in args.tasks.split(",")] if args.tasks else suite.tasks()
    copy_gbs = measure_copy_gbs(device)
    versions = {"torch_version": torch.__version__, "triton_version": triton.__version__,
                "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    jobs = [Job(task.name, mode, list(range(len(task.cases_for(device.backend)))[:args.max_cases]))
            for mode in modes for task in tasks]
    with tempfile.TemporaryDirectory(prefix="torch_baselines_") as work:
        scheduler = Scheduler(args, Path(work), Path(work) / "gpu.lock")
        scheduler.run(jobs)
    rows = rows_for(tasks, device, modes, args.max_cases, scheduler.results, copy_gbs, versions)
    if args.keep_from:
        rows = kept_from(args.keep_from, rows, device.name)
    write_parquet(rows, args.out)
    counts = collections.Counter(row["status"] for row in rows)
    print(f"{args.out}: {len(rows)} rows on {device.name} ({dict(counts)}); torch "
          f"{torch.__version__}; copy bandwidth "
          + (f"{copy_gbs:.0f} GB/s" if copy_gbs else "not measured (no GPU)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
