"""How a GPU's SM clock reads behave: ramps after idle, drops after gaps, scatter under a
steady load, with and without another process's kernels. Each read is `timing._clock_mhz`
(a spin kernel of known cycles timed with events), the read the settling rules use.

    python3 experiments/perf/clock_probe.py     (a GPU box; prints (ms, MHz) series)
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

from fitness import timing  # noqa: E402

def main() -> None:
    gpu = timing._gpu()
    x = torch.randn(1 << 24, device="cuda"); y = torch.empty_like(x)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    def load(seconds):
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            for _ in range(20):
                flush.zero_(); torch.add(x, 1.0, out=y)
            torch.cuda.synchronize()

    def series(total_s, step_s, what):
        t0 = time.perf_counter(); out = []
        while time.perf_counter() - t0 < total_s:
            if what == "load":
                load(step_s)
            else:
                time.sleep(step_s)
            out.append((round((time.perf_counter() - t0) * 1e3), round(timing._clock_mhz(gpu))))
        return out

    load(0.5)
    print("A: after 1 s idle, light load, clock every 20 ms:")
    time.sleep(1.0); print(series(0.4, 0.02, "load"))
    print("C: after 1 s idle, spin reads only every 10 ms:")
    time.sleep(1.0); print(series(0.3, 0.01, "idle"))
    print("D: clock right after 100 ms load then an idle gap:")
    for gap in (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5):
        load(0.1); time.sleep(gap); print(f"  gap {gap*1e3:.0f} ms: {timing._clock_mhz(gpu):.0f} MHz")
    print("B: steady light load, another process launches a small kernel every 5 ms:")
    noise = subprocess.Popen([sys.executable, "-c", "import torch,time\nx=torch.randn(1<<20,device='cuda')\nwhile True:\n x.mul_(1.0001); torch.cuda.synchronize(); time.sleep(0.005)"])
    time.sleep(3)
    load(0.3); print(series(0.4, 0.02, "load"))
    noise.kill()
    print("B2: same with no other process:")
    load(0.3); print(series(0.4, 0.02, "load"))


if __name__ == "__main__":
    main()
