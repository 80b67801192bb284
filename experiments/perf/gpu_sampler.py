"""What a benchmark's pool used of each GPU, sampled from outside every process.

A pool's workers and checkers share each GPU's memory, and what each process says about
itself (torch's allocator statistics) misses the others, the CUDA contexts and the mapped
shared buffers. `nvidia-smi` sees the whole device: its used memory, and its utilisation
(the share of the last sample period in which a kernel of any process was running), which
says whether the device's own time, rather than the locks around it, is what a batch waits
for. It is sampled on a thread twice a second, so a memory peak shorter than that can slip
through: those numbers are a floor.

    with GpuSampler() as gpus:
        ...
    print(gpus.memory_text(), gpus.utilization_text())
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import threading


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


class GpuSampler:
    """Samples every GPU while the `with` block runs: keeps the highest used memory and
    every utilisation reading."""

    def __init__(self, period_s: float = 0.5):
        self.period_s = period_s
        self.peak_mib: dict[int, int] = {}
        self.total_mib: dict[int, int] = {}
        self.utilization: dict[int, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="gpu-sampler")

    def __enter__(self) -> "GpuSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

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
