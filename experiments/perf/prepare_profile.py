"""Where a correctness call's trusted seconds go: the checker's prepare and compare, by step.

Every correctness call of a walk is one shared hold of the device from the checker's
`prepare` (inputs from a seed, a pristine copy, the reference, the shared buffer the worker
maps) to its `compare`; a timing run waits for such holds to end (issue 12: the drain), and
the pool's walks spend most of their device holds in them. This runs the real
`fitness.judge.checker.Checker` in this process (trusted code) on every case of every
built-in task, and splits each step's wall time with a device synchronisation after each:
making the inputs, the pristine copy, the reference, allocating and mapping the shared
buffer, packing the inputs into it, exporting its descriptor, and then the compare (the
reference's outputs put in the output slots, as an honest worker would). The first round
pays the caching allocator's growth and the reference's compilation; later rounds are the
steady state.

The pool runs ten checkers and a dozen workers on one device, each process with its own
context, and there a prepare takes 7x its quiet time (RESULTS.md §6g). `--processes K` runs K
copies of this profile at once, `--threads K` K checkers in this one process (each on its
own stream), `--load L` beside L processes that keep the device busy with short kernels as
workers' calls do: whether the cost is contexts, the device's time-slicing, or neither.

    python experiments/perf/prepare_profile.py --rounds 3
    python experiments/perf/prepare_profile.py --device interpreter --tasks vector_add
    python experiments/perf/prepare_profile.py --processes 10 --load 8 --rounds 3
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import concurrent.futures
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from benchmarks.registry import builtin  # noqa: E402
from fitness.processes import shared_memory  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import checking  # noqa: E402
from fitness.judge.checker import Checker  # noqa: E402

STEPS = ("inputs", "pristine", "reference", "allocate", "pack", "export", "prepare",
         "compare")
"""The parts of a prepare measured one by one, then the whole `Checker.prepare` and
`Checker.compare` as the checker runs them."""


def _timer(device):
    """Returns measure(fn) -> (fn's result, its ms), this thread's stream synchronised on
    both ends (the whole device, where this process has one stream)."""
    import torch

    def sync() -> None:
        if device.backend != "interpreter":
            torch.cuda.current_stream().synchronize()

    def measure(fn):
        sync()
        began = time.perf_counter()
        result = fn()
        sync()
        return result, (time.perf_counter() - began) * 1e3

    return measure


def profile_case(checker: Checker, task, params: dict, seed: int, measure, peer,
                 scratch: str) -> dict:
    """Returns ms per step (STEPS) for one case and seed."""
    import torch

    spent = {}
    inputs, spent["inputs"] = measure(lambda: task.make_inputs(params, seed,
                                                                checker.device.torch_device))
    _, spent["pristine"] = measure(lambda: [t.clone() if isinstance(t, torch.Tensor) else t
                                            for t in inputs])
    expected, spent["reference"] = measure(lambda: checking.as_list(task.reference(*inputs)))
    del inputs
    share = checker.shares
    if share:
        total = sum(t.numel() * t.element_size() for t in expected)
        buffer, spent["allocate"] = measure(lambda: shared_memory.SharedBuffer.create(
            max(total, 1), torch.cuda.current_device()))
        buffer.release()
    request = {"task": task, "params": params, "seed": seed, "dir": scratch,
               "prefix": "p", "token": "p", "expect": True, "check_inputs": True,
               "share": share}
    if share:
        inputs = task.make_inputs(params, seed, checker.device.torch_device)
        slot_bytes = [t.numel() * t.element_size() for t in expected]
        (buffer, _), spent["pack"] = measure(lambda: shared_memory.pack(
            inputs, slot_bytes, shared_memory.allocator(torch.cuda.current_device())))
        fd, spent["export"] = measure(buffer.export)
        os.close(fd)
        buffer.release()
        del inputs
    reply, spent["prepare"] = measure(lambda: checker.prepare(request))
    if share:
        os.close(shared_memory.receive_fd(peer, "p", 5.0))
        entry = checker.prepared["p"]
        outputs = shared_memory.fill_slots(entry.shared, entry.slots, expected)
        _, spent["compare"] = measure(lambda: checker.compare(
            {"task": task, "token": "p", "dir": scratch, "outputs": outputs,
             "inputs_after": []}))
    else:
        checker.discard({"tokens": ["p"]})
    return spent


def profile_suite(device, tasks, rounds: int, table: bool) -> dict[str, list[float]]:
    """Runs one checker over every case of `tasks`; returns step -> steady-state ms per
    case, and prints each case's row when `table`."""
    ours, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    checker = Checker({"device": device}, ours)
    scratch = tempfile.mkdtemp(prefix="prepare-profile-")
    measure = _timer(device)
    totals = collections.defaultdict(list)
    for task in tasks:
        for case in task.cases_for(device.backend):
            runs = [profile_case(checker, task, case.params, 1000 + at, measure, peer, scratch)
                    for at in range(rounds)]
            checker.reset({})
            steady = runs[1:] or runs
            row = {step: statistics.median(r[step] for r in steady)
                   for step in STEPS if step in steady[0]}
            for step, ms in row.items():
                totals[step].append(ms)
            if table:
                print(f"| {task.name} {case.name} | " + " | ".join(
                    f"{row[step]:.2f}" if step in row else "-" for step in STEPS) + " |",
                    flush=True)
    return totals


def profile_threads(device, tasks, rounds: int, threads: int) -> list[dict]:
    """Runs `threads` checkers in this process at once, each on a stream of its own;
    returns each one's totals."""
    import torch

    def one(_: int) -> dict:
        own = (contextlib.nullcontext() if device.backend == "interpreter"
               else torch.cuda.stream(torch.cuda.Stream()))
        with own:
            return profile_suite(device, tasks, rounds, table=False)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(threads)))


LOAD_SCRIPT = """
import sys, time, torch
x = torch.randn(4096, 4096, device="cuda")
print("busy", flush=True)
while True:  # a worker's calls: short kernels, a synchronisation after each, a pause
    for _ in range(20):
        (x * 2 + 1).sum()
    torch.cuda.synchronize()
    time.sleep(float(sys.argv[1]))
"""
"""A stand-in for candidates' correctness calls on the device (16M-element elementwise
kernels, 2 ms of launches and a wait at a time); killed when the profile ends."""


def start_load(count: int, pause_s: float) -> list[subprocess.Popen]:
    """Starts `count` load processes and returns them once each has its context up."""
    load = [subprocess.Popen([sys.executable, "-c", LOAD_SCRIPT, str(pause_s)],
                             stdout=subprocess.PIPE, text=True) for _ in range(count)]
    for process in load:
        process.stdout.readline()
    return load


def profile_processes(argv: list[str], processes: int) -> list[dict]:
    """Runs `processes` copies of this script at once (one checker each); returns each
    one's totals, read from its JSON summary line."""
    children = [subprocess.Popen([sys.executable, __file__, *argv, "--json"],
                                 stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    return [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]


def summary(totals: list[dict]) -> str:
    """Returns each step's ms per call: the mean over cases, then over checkers (min-max)."""
    parts = []
    for step in STEPS:
        means = [statistics.mean(t[step]) for t in totals if t.get(step)]
        if means:
            parts.append(f"{step} {statistics.mean(means):.2f} ({min(means):.2f}-{max(means):.2f})")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=0,
                        help="run this many copies at once (one checker each)")
    parser.add_argument("--threads", type=int, default=0,
                        help="run this many checkers in this process at once")
    parser.add_argument("--load", type=int, default=0,
                        help="processes keeping the device busy beside the checkers (cuda)")
    parser.add_argument("--load-pause", type=float, default=0.005,
                        help="seconds each load process rests between its bursts")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a copy's summary
    args = parser.parse_args()

    device = detect(args.device)
    registry = builtin()
    names = [n for n in args.tasks.split(",") if n]
    tasks = [registry.get(n) for n in names] if names else registry.tasks()
    load = start_load(args.load, args.load_pause) if args.load else []
    try:
        began = time.monotonic()
        if args.json:
            print(json.dumps(profile_suite(device, tasks, args.rounds, table=False)))
            return
        if args.processes:
            totals = profile_processes(
                ["--device", args.device, "--tasks", args.tasks, "--rounds", str(args.rounds)],
                args.processes)
        elif args.threads:
            totals = profile_threads(device, tasks, args.rounds, args.threads)
        else:
            print(f"device: {device.name} ({device.backend}); rounds: {args.rounds} "
                  f"(the first is not in the table)")
            print("| task case | " + " | ".join(STEPS) + " |")
            print("|---|" + "---|" * len(STEPS))
            totals = [profile_suite(device, tasks, args.rounds, table=True)]
        print(f"\n{args.processes} processes, {args.threads} threads, {args.load} "
              f"load processes, {time.monotonic() - began:.1f} s; steady state, ms per call: "
              + summary(totals), flush=True)
    finally:
        for process in load:
            process.kill()


if __name__ == "__main__":
    main()
