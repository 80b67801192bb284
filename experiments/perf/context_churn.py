"""Does other processes' device set-up and tear-down slow a kernel timed beside it?

fitness_bench timed copies of one honest kernel up to 8x apart on an H200 at fitness-20/21,
each copy's batches agreeing within 1% (flip2d 8192x8192 fp32: 135 and 738 us, RESULTS.md
§36), with stragglers stopped. One worker per candidate starts and ends a process with a
device context about 1.5 times a second there, outside the device lock. This times one
memory-bound kernel with events in this process, batch after batch, through phases: quiet;
`--churners` processes each starting, allocating `--alloc-mib`, and exiting, over and over
("start-exit"); one long-lived process allocating and freeing as much ("free"); quiet again.
Per phase it prints the per-run median of the batches, their p99 and max against the first
quiet phase's median, and writes every batch to `--out` (JSON lines) as it goes.

    python3 experiments/perf/context_churn.py --out churn.jsonl [--phase-s 15]

On a machine without a GPU it runs the same phases with a CPU copy timed by the wall clock
(a rehearsal of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch
from idle_clocks import batch_us  # beside this script

START_EXIT = """
import sys, torch
device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.empty(int(sys.argv[1]) << 20, dtype=torch.uint8, device=device)
x.fill_(1)
if device == "cuda":
    torch.cuda.synchronize()
"""
FREE = """
import sys, time, torch
device = "cuda" if torch.cuda.is_available() else "cpu"
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    x = torch.empty(int(sys.argv[1]) << 20, dtype=torch.uint8, device=device)
    x.fill_(1)
    del x
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
"""


def timed_batches(seconds: float, runs: int, gpu: bool, phase: str, out) -> list[float]:
    """Times `runs` flips of an 8192x8192 fp32 tensor per batch (`idle_clocks.batch_us`),
    batch after batch for `seconds`; returns each batch's per-run microseconds."""
    size = 8192 if gpu else 512
    source = torch.randn(size, size, device="cuda" if gpu else "cpu")
    target = torch.empty_like(source)
    per_run = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        us = batch_us(source, target, runs, gpu)
        per_run.append(us)
        out.write(json.dumps({"phase": phase, "at": time.monotonic(), "per_run_us": us}) + "\n")
        out.flush()
        time.sleep(0.005)
    return per_run


def churn(kind: str, count: int, alloc_mib: int, seconds: float) -> list[subprocess.Popen]:
    """Starts the phase's background processes (start-exit: `count` loops of fresh ones)."""
    if kind == "free":
        return [subprocess.Popen([sys.executable, "-c", FREE, str(alloc_mib), str(seconds)])]
    loop = (f"end=$((SECONDS+{int(seconds)})); while [ $SECONDS -lt $end ]; do "
            f"{sys.executable} -c '{START_EXIT}' {alloc_mib}; done")
    return [subprocess.Popen(["bash", "-c", loop]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--phase-s", type=float, default=15.0)
    parser.add_argument("--churners", type=int, default=4)
    parser.add_argument("--alloc-mib", type=int, default=2048)
    parser.add_argument("--runs", type=int, default=32)
    args = parser.parse_args()
    gpu = torch.cuda.is_available()
    print(f"device: {torch.cuda.get_device_name() if gpu else 'cpu (rehearsal)'}", flush=True)
    quiet = None
    with open(args.out, "a") as out:
        for phase in ("quiet", "start-exit", "free", "quiet-again"):
            background = ([] if phase.startswith("quiet") else
                          churn(phase, args.churners, args.alloc_mib, args.phase_s))
            per_run = timed_batches(args.phase_s, args.runs, gpu, phase, out)
            for process in background:
                process.wait(timeout=args.phase_s + 120)
            median = statistics.median(per_run)
            quiet = quiet or median
            ordered = sorted(per_run)
            p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
            print(f"{phase:12s} batches {len(per_run):5d}  per-run median {median:9.1f} us  "
                  f"vs quiet: median {median / quiet:.3f}x  p99 {p99 / quiet:.3f}x  "
                  f"max {ordered[-1] / quiet:.3f}x", flush=True)


if __name__ == "__main__":
    main()
