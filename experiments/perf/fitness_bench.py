"""Fitness throughput: the pooled, sandboxed Evaluator vs one fresh process per candidate.

A mixed batch (correct, wrong, crashing and hanging candidates over several built-in
tasks) is scored twice: by `fitness.evaluator.Evaluator` (long-lived workers, the full
cascade) and the naive way GEAK-eval uses (a fresh Python process per candidate that
imports torch + triton, checks each case once in-process and times with the same timing
code). Printed: candidates/min, the device's busy fraction, and timing repeatability (the
same kernel evaluated twice: relative difference of the medians).

    python experiments/perf/fitness_bench.py --device interpreter --tasks vector_add,row_sum
    python experiments/perf/fitness_bench.py --device cuda            # all built-in tasks
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from benchmarks.registry import builtin  # noqa: E402
from evo.records import Candidate, Task, make_candidate  # noqa: E402
from fitness.processes.pool import STARTUP_PHASES  # noqa: E402
import clock_knobs  # noqa: E402  (beside this script)
from machine_use import GpuSampler, HostCpu  # noqa: E402  (beside this script)

_NAIVE_SCRIPT = r'''
import importlib.util, sys, torch
from benchmarks.registry import builtin
from fitness import device as device_lib
from fitness.measure import timing
task = builtin().get(sys.argv[1])
device = device_lib.detect(sys.argv[3])
spec = importlib.util.spec_from_file_location("candidate", sys.argv[2])
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
entry = getattr(module, task.entry_point)
for case in task.cases_for(device.backend):
    inputs = task.make_inputs(case.params, 0, device.torch_device)
    expected, actual = task.reference(*inputs), entry(*inputs)
    atol, rtol = task.tolerance.get(str(expected.dtype).removeprefix("torch."), (1e-4, 1e-4))
    if actual.shape != expected.shape or not torch.allclose(actual.float(), expected.float(), atol=atol, rtol=rtol):
        print("wrong"); sys.exit(0)
    timing.bench([lambda: entry(*inputs)], device)
print("correct")
'''


def mixed_batch(tasks: list[Task], correct_per_task: int) -> list[tuple[Task, Candidate, str]]:
    """Returns (task, candidate, intent) triples: correct, wrong, crashing and hanging.

    The crashing one stores far out of bounds (an illegal memory access on a GPU, a
    segmentation fault under the interpreter): the worker dies, and the correct candidates
    queued behind it must not be blamed for that death.
    """
    batch = []
    for task in tasks:
        base, entry = task.baseline_source, task.entry_point
        # the failing variants wrap the baseline's entry point, renamed (the gate refuses
        # rebinding a module-level name)
        renamed = base.replace(f"def {entry}(", "def _original(", 1)
        wrap = f"\n\ndef {entry}(*args):\n    out = _original(*args)\n"
        out_of_bounds = ("\n\n@triton.jit\ndef _out_of_bounds_kernel(x_ptr):\n"
                         "    tl.store(x_ptr + 1099511627776, tl.load(x_ptr))\n")
        variants = [(f"{base}\n_VARIANT = {i}\n", "correct") for i in range(correct_per_task)]
        variants += [(f"{renamed}{wrap}    return args[0]\n", "wrong"),
                     (f"{renamed}{out_of_bounds}{wrap}    _out_of_bounds_kernel[(1,)](out)\n"
                      "    return out\n", "crash"),
                     (f"{renamed}{wrap}    while True:\n        pass\n", "hang")]
        batch += [(task, make_candidate(task.name, source), intent) for source, intent in variants]
    return batch


def run_pooled(batch, device: str, workers: int, timeout_s: float, sandbox: str,
               repeat: bool = True, spares: int | None = None, max_wall_s: float | None = None,
               cases_out: str | None = None):
    """Scores `batch` on one Evaluator, `workers` calls in flight; past `max_wall_s` (from the
    batch's start) the candidates not yet scored are dropped and the summary covers those
    scored: a run cut by its caller's limit prints nothing after its last progress line."""
    from fitness import Evaluator, Settings
    from fitness import Limits

    with Evaluator(Settings(device=device, workers=workers, sandbox=sandbox, spares=spares,
                            timeouts=Limits.uniform(timeout_s))) as evaluator:
        warm_start = time.monotonic()
        evaluator.evaluate(batch[0][0], batch[0][1])  # start-up is paid once per campaign
        warmup_s = time.monotonic() - warm_start
        start = time.monotonic()
        before = evaluator.stats()
        evaluations = []
        with GpuSampler() as gpus, HostCpu() as cpu, per_process(cases_out), \
                concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = {pool.submit(timed_evaluate, evaluator, task, candidate): why
                       for task, candidate, why in batch}
            walks = collections.defaultdict(list)  # intent -> (seconds evaluate() took, evaluation)
            scored_at = {}  # candidate id -> seconds into the batch its verdict came back
            for future in _completed(futures, max_wall_s):
                evaluation, seconds = future.result()
                evaluations.append(evaluation)
                scored_at[evaluation.candidate_id] = time.monotonic() - start
                walks[futures[future]].append((seconds, evaluation))
                if len(evaluations) % 20 == 0:  # partial numbers survive a cut-off run
                    print("  requests so far (count, mean ms): " + requests_line(before, evaluator.stats()),
                          flush=True)
                    print(f"  {len(evaluations)}/{len(batch)} scored in "
                          f"{time.monotonic() - start:.0f} s; {stage_means(evaluations)}; "
                          f"{where_time_went(before, evaluator.stats())}", flush=True)
            wall_s = time.monotonic() - start  # the cut's, not the calls still in flight's
            if len(evaluations) < len(batch):
                print(f"  cut at --max-wall-s {max_wall_s:g}: {len(evaluations)} of {len(batch)} "
                      f"scored in {wall_s:.0f} s; the rest dropped", flush=True)
                for future in futures:
                    future.cancel()
        after = evaluator.stats()
        busy_s = after["busy_s"] - before["busy_s"]
        kernel_s = after["kernel_s"] - before["kernel_s"]
        waited_s = after["timing_wait_s"] - before["timing_wait_s"]
        print(f"  sandbox {sandbox}: {stage_means(evaluations)} per candidate", flush=True)
        print("  requests (count, mean ms): " + requests_line(before, after), flush=True)
        print(f"  timing runs waited for the device {waited_s:.1f} s in all "
              f"({100 * waited_s / wall_s:.0f}% of the wall time; draining shared holders "
              f"{after['drain_wait_s'] - before['drain_wait_s']:.1f} s, "
              f"{after['stragglers'] - before['stragglers']} went ahead beside a straggler, stopped for it); "
              f"walks waited for it {after['walk_wait_s'] - before['walk_wait_s']:.1f} s in all",
              flush=True)
        print(f"  one worker per candidate: leases waited for a fresh worker's start-up "
              f"{after['ready_wait_s'] - before['ready_wait_s']:.1f} s in all, lease ends put "
              f"a fresh one in place in {after['renew_s'] - before['renew_s']:.1f} s; the start-ups "
              f"waited for, by their own word: {started_line(before, after)}", flush=True)
        alone_s = sum(after["request_s"].get(name, 0.0) - before["request_s"].get(name, 0.0)
                      for name in HELD_ALONE)
        print(f"  device held alone to time: {alone_s:.1f} s ({100 * alone_s / wall_s:.0f}% of "
              f"the wall time): with nothing else on the critical path the batch could not "
              f"beat {60 * len(batch) / max(alone_s, 1e-9):.0f} candidates/min", flush=True)
        print(f"  peak device memory used (nvidia-smi, twice a second): {gpus.memory_text()}",
              flush=True)
        print(f"  device utilisation (nvidia-smi: a kernel of any process running): "
              f"{gpus.utilization_text()}; host cores busy: {cpu.text()}", flush=True)
        print("  seconds per evaluate() call by intent (mean, max): " + ", ".join(
            f"{why} {statistics.mean(s for s, _ in spent):.2f} {max(s for s, _ in spent):.2f}"
            for why, spent in sorted(walks.items())), flush=True)
        print(f"  where the {workers} calls in flight spent the batch, by intent: "
              + walker_seconds(walks, workers * wall_s), flush=True)
        repeat = (repeatability(evaluator, {task.name: task for task, _, _ in batch}.values())
                  if repeat else [])
        retries = evaluator.stats()["retries"]
        timed = evaluator.timed_cases()
    if cases_out:  # the meter's log of every timed case, for what a slow copy's batches say
        with open(cases_out, "w") as handle:
            handle.writelines(json.dumps(entry) + "\n" for entry in timed)
    verdicts = collections.Counter(e.failure_kind or "correct" for e in evaluations)
    intent = {candidate.id: why for _, candidate, why in batch}
    false_failures = [e for e in evaluations if intent[e.candidate_id] == "correct" and not e.correct]
    for e in false_failures:
        print(f"  FALSE FAILURE {e.candidate_id}: {e.failure_kind} at {e.stage_reached}: "
              f"{e.error_trace[-300:]}", flush=True)
    in_batch = in_batch_spread(batch, evaluations, evaluator.device)
    bounded = [d for d in in_batch if d[2] >= REPEAT_BOUND_US]
    if bounded:
        print(f"  copies of the case that spread most: {copies_of(max(bounded)[1], batch, evaluations, evaluator.device, scored_at, timed)}",
              flush=True)
    return {"wall_s": wall_s, "scored": len(evaluations),
            "busy": busy_s / wall_s, "kernel_busy": kernel_s / wall_s,
            "verdicts": verdicts, "in_batch": in_batch,
            "warmup_s": warmup_s, "repeat": repeat, "false_failures": len(false_failures),
            "retries": retries,
            "meaningful": all(e.timing_meaningful for e in evaluations if e.correct)}


@contextlib.contextmanager
def per_process(cases_out: str | None):
    """Beside `--cases-out`, `nvidia-smi pmon` (each process's SM and memory use, every
    second, dated) into `<cases_out>.pmon.txt` for the block: which process had the GPU while
    a copy of a kernel read slow (the log's "wall" times)."""
    if not cases_out or shutil.which("nvidia-smi") is None:
        yield
        return
    with open(f"{cases_out}.pmon.txt", "w") as handle:
        sampler = subprocess.Popen(["nvidia-smi", "pmon", "-s", "u", "-d", "1", "-o", "DT"],
                                   stdout=handle, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            sampler.terminate()
            sampler.wait(timeout=10)


def _completed(futures, max_wall_s: float | None):
    """Yields `futures` as they complete, until `max_wall_s` has passed (None: all)."""
    try:
        yield from concurrent.futures.as_completed(futures, timeout=max_wall_s)
    except concurrent.futures.TimeoutError:
        return


HELD_ALONE = ("checker.timed_release", "checker.timed_judge")
"""The requests a walk makes while it holds the device alone (`fitness.judge.clock`)."""


def where_time_went(before: dict, now: dict, top: int = 4) -> str:
    """Returns the device lock's waits so far and the requests that took the most seconds
    in all: what a run cut short still tells about where its time went."""
    spent = {name: seconds - before["request_s"].get(name, 0.0)
             for name, seconds in now["request_s"].items()}
    busiest = sorted(spent.items(), key=lambda item: -item[1])[:top]
    alone_s = sum(spent.get(name, 0.0) for name in HELD_ALONE)
    return (f"timing waited {now['timing_wait_s'] - before['timing_wait_s']:.0f} s, walks "
            f"{now['walk_wait_s'] - before['walk_wait_s']:.0f} s; device held alone {alone_s:.0f} s; "
            f"leases waited for a start-up {now['ready_wait_s'] - before['ready_wait_s']:.0f} s "
            f"({started_line(before, now)}), renewed workers "
            f"{now['renew_s'] - before['renew_s']:.0f} s; most time in "
            + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in busiest))


def started_line(before: dict, now: dict) -> str:
    """Returns the fresh candidate workers' start-up phases since `before` (their own word)."""
    was, now = before["started_s"], now["started_s"]
    count = now.get("starts", 0) - was.get("starts", 0)
    return f"{count} starts, " + ", ".join(
        f"{phase} {now.get(phase, 0.0) - was.get(phase, 0.0):.1f} s"
        for phase in (*STARTUP_PHASES, "stopped"))  # stopped: by the pool's clock, during holds


def requests_line(before: dict, now: dict) -> str:
    """Returns each request's count since `before` and its mean milliseconds, by name."""
    parts = []
    for name, count in sorted(now["requests"].items()):
        count -= before["requests"].get(name, 0)
        if count:
            seconds = now["request_s"][name] - before["request_s"].get(name, 0.0)
            parts.append(f"{name} {count} {1e3 * seconds / count:.0f}")
    return ", ".join(parts)


def walker_seconds(walks: dict, capacity_s: float) -> str:
    """Returns, per intent, the share of the in-flight calls' seconds (`capacity_s`: calls
    in flight times the wall time) its evaluate() calls took, and what their stages took of
    that (the rest: waits for a worker, a checker, the baseline's timing). With a fixed
    number of calls in flight, the batch's pace is that capacity over the mean call."""
    parts = []
    for why, spent in sorted(walks.items()):
        total = sum(seconds for seconds, _ in spent)
        stages = {name: sum(getattr(e, name) for _, e in spent)
                  for name in ("compile_s", "check_s", "bench_s")}
        parts.append(f"{why} {total:.0f} s ({100 * total / capacity_s:.0f}%: " + ", ".join(
            f"{name} {seconds:.0f}" for name, seconds in stages.items())
            + f", rest {total - sum(stages.values()):.0f})")
    return "; ".join(parts)


def timed_evaluate(evaluator, task, candidate):
    """Returns (the evaluation, the seconds evaluate() took: lease waits included)."""
    began = time.monotonic()
    evaluation = evaluator.evaluate(task, candidate)
    return evaluation, time.monotonic() - began


def stage_means(evaluations) -> str:
    """Returns the mean seconds per stage, to show where the time goes."""
    count = max(len(evaluations), 1)
    return ", ".join(f"{name} {sum(getattr(e, name) for e in evaluations) / count:.2f} s"
                     for name in ("compile_s", "check_s", "bench_s"))


REPEAT_BOUND_US = 20.0  # issue 12's repeatability goal holds for cases at least this slow


def timed_copies(batch, evaluations, device):
    """Yields ("task case", evaluation, case index) for every timed case of the batch's
    correct candidates: copies of their task's baseline."""
    tasks = {candidate.id: task for task, candidate, intent in batch if intent == "correct"}
    for evaluation in evaluations:
        task = tasks.get(evaluation.candidate_id)
        if task is None or not evaluation.correct:
            continue
        for at, case in enumerate(task.cases_for(device.backend)):
            if evaluation.latency_us[at] is not None:
                yield f"{task.name} {case.name}", evaluation, at


def in_batch_spread(batch, evaluations, device) -> list[tuple[float, str, float, float]]:
    """Returns (max / min - 1, "task case", min, max) per case over the correct candidates
    of each task: copies of its baseline, so one kernel timed several times while the rest
    of the batch compiled and checked beside it. What the repeat pass shows on a quiet
    device, this shows under the pool's own load."""
    latencies = collections.defaultdict(list)
    for label, evaluation, at in timed_copies(batch, evaluations, device):
        latencies[label].append(evaluation.latency_us[at])
    return [(max(values) / min(values) - 1, label, min(values), max(values))
            for label, values in latencies.items() if len(values) > 1]


def copies_of(label: str, batch, evaluations, device, scored_at: dict, timed: list[dict]) -> str:
    """Returns each copy's p20 / median / p80 on case `label` ("task case") and when its
    verdict came back: whether a slow copy was slow in every run (the clock) or in some
    (a neighbour on the device), and what ran at the time; from the meter's log, its
    method, the holders its hold went ahead beside, and its fills' GB/s (low in every
    batch: another context had the GPU throughout)."""
    logged = {(entry["candidate"], f"{entry['task']} {entry['case']}"): entry for entry in timed}

    def log_of(candidate_id: str) -> str:
        entry = logged.get((candidate_id, label))
        if entry is None:
            return ""
        gbps = "/".join(f"{g:.0f}" for g in entry["fill_gbps"])
        return f" ({entry['method']}, {entry['stopped']}, beside {entry['beside']}, fills {gbps} GB/s)"

    found = [f"{e.latency_p20_us[at]:.1f}/{e.latency_us[at]:.1f}/{e.latency_p80_us[at]:.1f} us "
             f"at {scored_at[e.candidate_id]:.1f} s{log_of(e.candidate_id)}"
             for case, e, at in timed_copies(batch, evaluations, device) if case == label]
    return f"{label}: " + "; ".join(found)


def repeatability(evaluator, tasks) -> list[tuple[float, str, float, float]]:
    """Returns (|a - b| / min(a, b), "task case", a, b) per case for each task's baseline
    scored twice."""
    diffs = []
    for task in tasks:
        first, second = (evaluator.evaluate(task, make_candidate(
            task.name, f"{task.baseline_source}\n_REPEAT = {i}\n")) for i in (1, 2))
        if first.correct and second.correct:
            diffs += [(abs(a - b) / min(a, b), f"{task.name} {case.name}", a, b)
                      for case, a, b in zip(task.cases_for(evaluator.device.backend),
                                            first.latency_us, second.latency_us)
                      if a is not None and b is not None]
    return diffs


def run_naive(batch, device: str, workers: int, timeout_s: float, startup_s: float,
              sandbox: str):
    """One fresh process per candidate (with the same parallelism), as GEAK-eval runs them;
    with `sandbox` "bwrap" each process is walled in exactly as a pooled worker is
    (`fitness.processes.jail`), with the task code it needs mounted read-only.

    Its limit is the stage limit plus `startup_s`: a fresh process cannot tell a slow
    import from a hang, so it must allow for the import on every candidate.
    """
    from fitness.processes import jail

    folder = tempfile.mkdtemp(prefix="naive-fitness-")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    script_dir = os.path.join(folder, "script")
    os.makedirs(script_dir)
    with open(os.path.join(script_dir, "naive_run.py"), "w") as handle:
        handle.write(_NAIVE_SCRIPT)
    mounts = {os.path.join(root, name): os.path.join(root, name) for name in ("benchmarks", "evo")}
    mounts[script_dir] = os.path.join(root, "naive_bench")  # importable as naive_bench.naive_run

    def one(item):
        task, candidate, _ = item
        workdir = tempfile.mkdtemp(prefix="cand-", dir=folder)
        jail.prepare_workdir(workdir)
        with open(os.path.join(workdir, "candidate.py"), "w") as handle:
            handle.write(candidate.source)
        inside = jail.SANDBOX_TMP if sandbox == "bwrap" else workdir
        argv, env = jail.command("naive_bench.naive_run",
                                 [task.name, os.path.join(inside, "candidate.py"), device],
                                 workdir=workdir, backend=device, limits=jail.Limits(),
                                 use_bwrap=sandbox == "bwrap", ro_dirs=mounts)
        if sandbox != "bwrap":  # no mount namespace: the script is found by path
            env["PYTHONPATH"] = os.pathsep.join([root, folder + "/script"])
            argv = [sys.executable, os.path.join(script_dir, "naive_run.py"), *argv[-3:]]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, cwd=workdir,
                                  timeout=timeout_s + startup_s, env=env)
        except subprocess.TimeoutExpired:
            return "timeout"
        lines = done.stdout.split()
        return lines[-1] if done.returncode == 0 and lines else "error"

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        verdicts = collections.Counter(pool.map(one, batch))
    return {"wall_s": time.monotonic() - start, "verdicts": verdicts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all "
                        "built-in on a GPU, vector_add,row_sum under the interpreter)")
    parser.add_argument("--workers", type=int, default=4, help="candidate worker processes")
    parser.add_argument("--correct-per-task", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=10.0, help="stage limit, seconds")
    parser.add_argument("--naive-startup", type=float, default=30.0,
                        help="extra seconds a fresh process gets for importing torch + triton")
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--no-repeat", action="store_true",
                        help="skip the timing-repeatability pass (each baseline scored twice)")
    parser.add_argument("--sandbox", default="bwrap", choices=("bwrap", "off", "both"),
                        help="score in the OS sandbox, without it, or both (its cost)")
    parser.add_argument("--spares", type=int, default=None,
                        help="candidate workers started beside the lent ones (default: the "
                             "Evaluator's, half of --workers on a GPU)")
    parser.add_argument("--max-wall-s", type=float, default=None,
                        help="stop scoring the batch this many seconds in and report on what was "
                             "scored (its rate scaled to the batch), before a caller's limit cuts it")
    parser.add_argument("--cases-out", default=None,
                        help="write the meter's log of every timed case here (JSON lines)")
    parser.add_argument("--naive-sample", type=int, default=0,
                        help="run the naive way on every k-th candidate only (same mix), and "
                             "compare rates; 0 runs it on the whole batch")
    clock_knobs.add(parser)
    args = parser.parse_args()

    from fitness.device import detect

    clock_knobs.apply(args)

    device = detect(args.device)
    registry = builtin()
    default = "vector_add,row_sum" if device.backend == "interpreter" else ""
    names = [n for n in (args.tasks or default).split(",") if n]
    tasks = [registry.get(n) for n in names] if names else registry.tasks()
    batch = mixed_batch(tasks, args.correct_per_task)
    intents = collections.Counter(intent for _, _, intent in batch)
    print(f"device: {device.name} ({device.backend}); date: {datetime.date.today()}; "
          f"tasks: {len(tasks)}; batch: {len(batch)} candidates {dict(intents)}; "
          f"workers: {args.workers}; spares: {'default' if args.spares is None else args.spares}; stage limit: {args.timeout:g} s")

    modes = ("bwrap", "off") if args.sandbox == "both" else (args.sandbox,)
    runs = {mode: run_pooled(batch, device.backend, args.workers, args.timeout, mode,
                             not args.no_repeat, args.spares, args.max_wall_s, args.cases_out)
               for mode in modes}
    pooled = runs[modes[0]]
    rows = [(f"pooled, sandbox {mode}", run["wall_s"] * len(batch) / max(run["scored"], 1),
             f"{run['busy']:.0%}/{run['kernel_busy']:.0%}", run["verdicts"])
            for mode, run in runs.items()]  # a cut run's wall scaled to the batch at its rate
    if not args.skip_naive:
        sample = batch[::args.naive_sample] if args.naive_sample > 1 else batch
        naive = run_naive(sample, device.backend, args.workers, args.timeout,
                          args.naive_startup, modes[0])
        # Scaled to the whole batch at the sample's rate, so the rows compare like for like.
        rows.append((f"fresh process ({len(sample)}, {modes[0]})"[:24],
                     naive["wall_s"] * len(batch) / len(sample), "-", naive["verdicts"]))
    print(f"\n{'way':<24}{'wall s':>9}{'cand/min':>10}{'busy lock/kernel':>18}  verdicts")
    for name, wall_s, busy, verdicts in rows:
        print(f"{name:<24}{wall_s:>9.1f}{len(batch) / wall_s * 60:>10.1f}{busy:>18}  "
              f"{dict(sorted(verdicts.items()))}")
    for mode, run in runs.items():
        print(f"sandbox {mode}: false failures of correct candidates: {run['false_failures']}, "
              f"walks retried after a worker death: {run['retries']}")
    if len(runs) == 2:
        per_min = {mode: 60 * max(run["scored"], 1) / run["wall_s"] for mode, run in runs.items()}
        print(f"sandbox cost: {per_min['off'] / per_min['bwrap'] - 1:+.1%} wall time "
              f"({per_min['bwrap']:.1f} vs {per_min['off']:.1f} candidates/min)")
    if not args.skip_naive:
        print(f"\nspeed-up of the pool over process-per-candidate: "
              f"{rows[-1][1] / rows[0][1]:.1f}x")
    note = "" if pooled["meaningful"] else " (interpreter: wall-clock, not meaningful)"
    for what, diffs in (("same kernel twice on a quiet device", pooled["repeat"]),
                        ("spread of one kernel's copies timed during the batch", pooled["in_batch"])):
        bounded = [d for d in diffs if min(d[2], d[3]) >= REPEAT_BOUND_US]
        for label, chosen in ((f"{len(diffs)} cases", diffs),
                              (f"{len(bounded)} cases >= {REPEAT_BOUND_US:g} us", bounded)):
            if chosen:
                worst = max(chosen)
                print(f"timing repeatability ({what}, {label}): median "
                      f"{sorted(chosen)[len(chosen) // 2][0]:.1%}, max {worst[0]:.1%} ({worst[1]}: "
                      f"{worst[2]:.1f} / {worst[3]:.1f} us){note}")
    print(f"pool start-up + first candidate (paid once): {pooled['warmup_s']:.1f} s")


if __name__ == "__main__":
    main()
