"""Is a short batch after an idle gap slower, and is the device's clock why?

fitness_bench timed copies of one honest memory-bound kernel up to 5.5x and 14x apart on an
H200, each copy's batches within 1% of each other, mostly in the bench's first seconds
(RESULTS.md §36); other processes' contexts starting and ending beside it moved a kernel's
time 1.2x at the p99 (`context_churn.py`). The judge's batches are a few milliseconds of
runs apart by tens of milliseconds of host work, where event timing warms up and then runs
back to back. This sleeps a gap, then times three batches of `--runs` flips of an 8192x8192
fp32 tensor back to back (device events), reading the memory and SM clocks and the
performance state through NVML before each; gaps from 1 ms to 3 s, `--repeats` times each.
Prints per gap and batch position the median per-run time against the busy one, and the
clocks seen; writes every batch to `--out` (JSON lines) as it goes.

    python3 experiments/perf/idle_clocks.py --out clocks.jsonl

Without a GPU it times a CPU copy by the wall clock and reads no clock (a rehearsal).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import time

import torch

GAPS_S = (0.0, 0.001, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
_CLOCK_SM, _CLOCK_MEM = 1, 2  # nvmlClockType_t


class Nvml:
    """The device's current SM and memory clocks (MHz) and performance state, through
    libnvidia-ml by ctypes; every reading None where it cannot be loaded."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            self.lib.nvmlInit_v2()
            self.handle = ctypes.c_void_p()
            self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle))
        except OSError:
            self.lib = None

    def read(self) -> dict:
        if self.lib is None:
            return {"sm_mhz": None, "mem_mhz": None, "pstate": None}
        values = {}
        for name, kind in (("sm_mhz", _CLOCK_SM), ("mem_mhz", _CLOCK_MEM)):
            clock = ctypes.c_uint()
            self.lib.nvmlDeviceGetClockInfo(self.handle, kind, ctypes.byref(clock))
            values[name] = clock.value
        state = ctypes.c_int()
        self.lib.nvmlDeviceGetPerformanceState(self.handle, ctypes.byref(state))
        return {**values, "pstate": state.value}


def batch_us(source, target, runs: int, gpu: bool) -> float:
    """Times `runs` flips back to back; returns the per-run microseconds."""
    if gpu:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            target.copy_(source.flip(1))
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e3 / runs
    began = time.perf_counter()
    for _ in range(runs):
        target.copy_(source.flip(1))
    return (time.perf_counter() - began) * 1e6 / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    gpu = torch.cuda.is_available()
    nvml = Nvml()
    size = 8192 if gpu else 512
    source = torch.randn(size, size, device="cuda" if gpu else "cpu")
    target = torch.empty_like(source)
    for _ in range(50):  # busy: back to back
        batch_us(source, target, args.runs, gpu)
    busy = statistics.median(batch_us(source, target, args.runs, gpu) for _ in range(50))
    print(f"device: {torch.cuda.get_device_name() if gpu else 'cpu (rehearsal)'}; busy per-run "
          f"{busy:.1f} us; clocks {nvml.read()}", flush=True)
    with open(args.out, "a") as out:
        for gap_s in GAPS_S:
            rows = []
            for repeat in range(args.repeats):
                time.sleep(gap_s)
                for position in range(3):
                    clocks = nvml.read()
                    us = batch_us(source, target, args.runs, gpu)
                    row = {"gap_s": gap_s, "repeat": repeat, "position": position,
                           "per_run_us": us, **clocks}
                    rows.append(row)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            for position in range(3):
                mine = [r for r in rows if r["position"] == position]
                median = statistics.median(r["per_run_us"] for r in mine)
                mem = sorted({r["mem_mhz"] for r in mine if r["mem_mhz"] is not None})
                sm = sorted({r["sm_mhz"] for r in mine if r["sm_mhz"] is not None})
                states = sorted({r["pstate"] for r in mine if r["pstate"] is not None})
                print(f"gap {gap_s:6.3f} s  batch {position}: per-run {median:9.1f} us = "
                      f"{median / busy:.3f}x busy (max {max(r['per_run_us'] for r in mine) / busy:.3f}x); "
                      f"mem MHz {mem} sm MHz {sm[:1] + sm[-1:]} P{states}", flush=True)


if __name__ == "__main__":
    main()
