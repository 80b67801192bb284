"""What a kernel left running in another process does to the checker's fill (issue 48, the
fill's exposure: RESULTS.md#fill-exposure).

Two CUDA contexts time-slice (no MPS). A child process starts a one-program Triton kernel that
never ends (a volatile load of a flag nobody sets), as a compromised worker could on a side
stream; this process times its own work before and while it runs: a tiny kernel (how long
this context waits for its turn), device-to-device copies of 64 MiB to 1 GiB (does a copy
wait for a turn, and is it cut into several), and a vector_add-shaped fill (15 runs of two
2^24 fp32 inputs, drawn and copied one after another, as fitness-13's `TimedBatch.fill` did;
and the same sets drawn first in private memory and copied in one burst, as it does now). The wall
time of each, beside its quiet one, tells the time slice, how much GPU time the other
context got during a fill, and whether a fill shorter than a slice runs in one turn (what a
fill drawn first in private memory and copied in one burst would need).

    python3 experiments/perf/timeslice_probe.py --out rows.jsonl

One JSON row per phase and operation (wall ms: median, p90, max over --repeat) to stdout and
--out as it goes. Needs a CUDA device; the child is killed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SPIN = '''
import sys, time
import torch, triton, triton.language as tl

@triton.jit
def _spin(flag_ptr):
    ready = tl.load(flag_ptr, volatile=True)
    while ready == 0:
        ready = tl.load(flag_ptr, volatile=True)

flag = torch.zeros(1, dtype=torch.int32, device="cuda")
_spin[(1,)](flag)
time.sleep(0.5)
print("spinning", flush=True)
time.sleep(3600)
'''


def timed(fn, repeat: int) -> dict:
    """Wall milliseconds of `fn()` and a device synchronize, `repeat` times."""
    import torch

    walls = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - began) * 1e3)
    walls.sort()
    return {"median_ms": round(statistics.median(walls), 3),
            "p90_ms": round(walls[int(0.9 * (len(walls) - 1))], 3), "max_ms": round(walls[-1], 3)}


def operations():
    """The measured operations, by name: (callable, what it moves)."""
    import torch

    tiny = torch.empty(1, device="cuda")
    ops = {"tiny kernel": (lambda: tiny.fill_(1.0), "4 B")}
    for mib in (64, 256, 1024):
        src = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ops[f"copy {mib} MiB"] = (lambda s=src, d=dst: d.copy_(s), f"{mib} MiB")
    sets = torch.empty((15, 2, 1 << 24), device="cuda")

    def fill():
        for run in range(15):
            for at in range(2):
                sets[run, at].copy_(torch.randn(1 << 24, device="cuda"))

    drawn = torch.randn_like(sets)  # the burst's private sets, drawn before it

    ops["vector_add fill, 15 runs"] = (fill, "15 x 2 x 64 MiB drawn and copied")
    ops["vector_add burst, 15 runs"] = (lambda: sets.copy_(drawn), "15 x 2 x 64 MiB drawn first, one copy")
    return ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--beside-s", type=float, default=60.0,
                        help="the spinning child is killed after this long, measured or not")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("timeslice_probe needs a CUDA device")
    ops = operations()
    for fn, _ in ops.values():  # warm-up: allocations, the RNG's first launch
        timed(fn, 2)

    def measure(phase: str) -> None:
        for name, (fn, moves) in ops.items():
            row = {"phase": phase, "op": name, "moves": moves, **timed(fn, args.repeat)}
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as handle:
                handle.write(json.dumps(row) + "\n")

    measure("quiet")
    # Triton reads a kernel's source from its file: the child runs from one, not `-c`
    spin_file = tempfile.NamedTemporaryFile("w", suffix="_spin.py", delete=False)
    spin_file.write(SPIN)
    spin_file.close()
    child = subprocess.Popen([sys.executable, spin_file.name], stdout=subprocess.PIPE, text=True)
    # were this context never given a turn, its synchronize would wait for ever: the child
    # goes after `--beside-s` whatever happens, and the rows say how long each op waited
    deadline = threading.Timer(args.beside_s, child.kill)
    deadline.daemon = True
    deadline.start()
    try:
        line = child.stdout.readline().strip()
        if line != "spinning":
            raise SystemExit(f"the spinning child did not start (exit {child.poll()})")
        measure("beside a kernel that never ends")
    finally:
        deadline.cancel()
        child.kill()
        child.wait(timeout=60)
        os.unlink(spin_file.name)
    measure("quiet again")


if __name__ == "__main__":
    main()
