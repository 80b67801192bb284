"""What a benchmark's pool used of the machine, sampled from outside every process.

A pool's workers and checkers share each GPU's memory, and what each process says about
itself (torch's allocator statistics) misses the others, the CUDA contexts and the mapped
shared buffers. `nvidia-smi` sees the whole device: its used memory, and its utilisation
(the share of the last sample period in which a kernel of any process was running), which
says whether the device's own time, rather than the locks around it, is what a batch waits
for. The host's cores run the walks' host work (Triton compiling, the checkers' Python,
worker start-ups, the sandbox) beside the threads that drive timing and comparisons: when
they are saturated every holder of the device slows down, which looks from inside like the
device being the bottleneck; /proc/stat says how busy they were. Both are sampled on a
thread twice a second, so a memory peak shorter than that can slip through: those numbers
are a floor.

    with GpuSampler() as gpus, HostCpu() as cpu:
        ...
    print(gpus.memory_text(), gpus.utilization_text(), cpu.text())
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import threading


class _Sampler:
    """Runs `_sample` on a daemon thread while the `with` block runs; `_sample` loops until
    `_stop` is set, waiting `period_s` between samples."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True,
                                        name=type(self).__name__)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _sample(self) -> None:
        raise NotImplementedError


def query() -> dict[int, tuple[int, int, int]] | None:
    """Returns {GPU index: (MiB used, MiB total, % utilisation)}, or None without
    `nvidia-smi`."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used,memory.total,utilization.gpu",
             "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10,
            check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = {}
    for line in listing.splitlines():
        index, used, total, utilization = (int(field) for field in line.split(","))
        found[index] = (used, total, utilization)
    return found


class GpuSampler(_Sampler):
    """Samples every GPU while the `with` block runs: keeps the highest used memory and
    every utilisation reading."""

    def __init__(self, period_s: float = 0.5):
        super().__init__(period_s)
        self.peak_mib: dict[int, int] = {}
        self.total_mib: dict[int, int] = {}
        self.utilization: dict[int, list[int]] = {}

    def _sample(self) -> None:
        while not self._stop.is_set():
            seen = query()
            if seen is None:
                return
            for index, (used, total, utilization) in seen.items():
                self.peak_mib[index] = max(used, self.peak_mib.get(index, 0))
                self.total_mib[index] = total
                self.utilization.setdefault(index, []).append(utilization)
            self._stop.wait(self.period_s)

    def memory_text(self) -> str:
        """Returns "GPU 0: 61.2 / 139.8 GiB, ..." or why there is no number."""
        if not self.peak_mib:
            return "not sampled (no nvidia-smi)"
        return ", ".join(f"GPU {index}: {self.peak_mib[index] / 1024:.1f} / "
                         f"{self.total_mib[index] / 1024:.1f} GiB"
                         for index in sorted(self.peak_mib))

    def utilization_text(self) -> str:
        """Returns "GPU 0: mean 43%, 12% of samples idle, ..." or why there is no number."""
        if not self.utilization:
            return "not sampled (no nvidia-smi)"
        return ", ".join(
            f"GPU {index}: mean {statistics.mean(readings):.0f}%, idle in "
            f"{100 * sum(reading == 0 for reading in readings) / len(readings):.0f}% of "
            f"{len(readings)} samples" for index, readings in sorted(self.utilization.items()))


def _busy_and_total() -> tuple[int, int] | None:
    """Returns the (busy, total) jiffies of all cores since boot, or None off Linux."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(field) for field in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


class HostCpu(_Sampler):
    """Samples the share of all cores busy in each period while the `with` block runs."""

    def __init__(self, period_s: float = 0.5):
        super().__init__(period_s)
        self.busy_shares: list[float] = []

    def _sample(self) -> None:
        last = _busy_and_total()
        while last is not None and not self._stop.wait(self.period_s):
            now = _busy_and_total()
            if now is None or now[1] == last[1]:
                continue
            self.busy_shares.append((now[0] - last[0]) / (now[1] - last[1]))
            last = now

    def text(self) -> str:
        """Returns "mean 71% of 16 cores, ..." or why there is no number."""
        if not self.busy_shares:
            return "not sampled (no /proc/stat)"
        shares = sorted(self.busy_shares)
        saturated = sum(share >= 0.95 for share in shares) / len(shares)
        return (f"mean {100 * statistics.mean(shares):.0f}% of {os.cpu_count()} cores, "
                f"p90 {100 * shares[int(0.9 * (len(shares) - 1))]:.0f}%, "
                f"at least 95% busy in {100 * saturated:.0f}% of {len(shares)} samples")
