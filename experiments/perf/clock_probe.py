"""How a GPU's SM clock reads behave: ramps after idle, drops after gaps, scatter under a
steady load, with and without another process's kernels, how the scatter shrinks with a
longer spin, and how the clock and a light kernel's latency recover after heavy
tensor-core load. Each read is `timing._clock_mhz` (a spin kernel of known cycles timed
with events), the read the settling rules use.

    python3 experiments/perf/clock_probe.py [SECTION ...]   (a GPU box; default: all)

Sections: A-D, B (another process), E (scatter by spin length), F (recovery after heavy
load), G (reads during heavy load).
"""

import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

from fitness.measure import timing  # noqa: E402

GPU = timing.REAL_CLOCK.device()
X = torch.randn(1 << 24, device="cuda")
Y = torch.empty_like(X)
FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
A16 = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
C16 = torch.empty_like(A16)


def read(cycles: int = timing._SPIN_CYCLES) -> float:
    """One clock read with a spin of `cycles` (behind a lead of a quarter of them)."""
    return timing._clock_mhz(timing.REAL_CLOCK, cycles)


def light_load(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        for _ in range(20):
            FLUSH.zero_(); torch.add(X, 1.0, out=Y)
        torch.cuda.synchronize()


def heavy_load(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        for _ in range(4):
            torch.matmul(A16, A16, out=C16)
        torch.cuda.synchronize()


def light_latency_us(runs: int = 30) -> float:
    """Median of a ~28-us memory-bound add behind the cache flush, event-timed."""
    times = []
    for _ in range(runs):
        start, end = GPU.event(enable_timing=True), GPU.event(enable_timing=True)
        FLUSH.zero_()
        GPU.record(start); torch.add(X, 1.0, out=Y); GPU.record(end)
        GPU.synchronize()
        times.append(GPU.elapsed_ms(start, end) * 1e3)
    return statistics.median(times)


def series(total_s, step_s, what):
    t0 = time.perf_counter(); out = []
    while time.perf_counter() - t0 < total_s:
        light_load(step_s) if what == "load" else time.sleep(step_s)
        out.append((round((time.perf_counter() - t0) * 1e3), round(read())))
    return out


def spread(values) -> str:
    mid = statistics.median(values)
    return (f"median {mid:.0f} MHz, min {min(values) / mid - 1:+.1%}, max {max(values) / mid - 1:+.1%}, "
            f"stdev {statistics.stdev(values) / mid:.2%}")


def section_a():
    print("A: after 1 s idle, light load, clock every 20 ms:")
    time.sleep(1.0); print(series(0.4, 0.02, "load"))
    print("C: after 1 s idle, spin reads only every 10 ms:")
    time.sleep(1.0); print(series(0.3, 0.01, "idle"))
    print("D: clock right after 100 ms load then an idle gap:")
    for gap in (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5):
        light_load(0.1); time.sleep(gap); print(f"  gap {gap*1e3:.0f} ms: {read():.0f} MHz")


def section_b():
    print("B: steady light load, another process launches a small kernel every 5 ms:")
    noise = subprocess.Popen([sys.executable, "-c", "import torch,time\nx=torch.randn(1<<20,device='cuda')\nwhile True:\n x.mul_(1.0001); torch.cuda.synchronize(); time.sleep(0.005)"])
    time.sleep(3)
    light_load(0.3); print(series(0.4, 0.02, "load"))
    noise.kill()
    print("B2: same with no other process:")
    light_load(0.3); print(series(0.4, 0.02, "load"))


def section_e():
    print("E: 40 reads per spin length, between 5-ms slices of light load, then back to back:")
    for cycles in (200_000, 500_000, 1_000_000, 2_000_000):
        between = []
        for _ in range(40):
            light_load(0.005); between.append(read(cycles))
        back = [read(cycles) for _ in range(40)]
        print(f"  {cycles:>9} cycles: between loads {spread(between)}; back to back {spread(back)}")


def section_f():
    print("F: after 1 s of fp16 8192^3 matmuls, an idle gap, then clock (1M-cycle spin) and a 28-us add:")
    light_load(0.5); time.sleep(1.0)
    print(f"  quiet: clock {read(1_000_000):.0f} MHz, add {light_latency_us():.2f} us")
    for gap in (0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0):
        heavy_load(1.0); time.sleep(gap)
        before = read(1_000_000); add = light_latency_us(); after = read(1_000_000)
        print(f"  gap {gap*1e3:6.0f} ms: clock {before:.0f} -> {after:.0f} MHz, add {add:.2f} us")


def section_g():
    print("G: during steady fp16 matmul load, a read (1M-cycle spin) after each 20-ms slice:")
    heavy_load(0.5)
    out = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        heavy_load(0.02); out.append((round((time.perf_counter() - t0) * 1e3), round(read(1_000_000))))
    print(out)


SECTIONS = {"A": section_a, "B": section_b, "E": section_e, "F": section_f, "G": section_g}


def main() -> None:
    light_load(0.5)
    for name in sys.argv[1:] or SECTIONS:
        SECTIONS[name]()


if __name__ == "__main__":
    main()
