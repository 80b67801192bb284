"""The peak device memory a benchmark's pool used, sampled from outside every process.

A pool's workers and checkers share each GPU's memory, and what each process says about
itself (torch's allocator statistics) misses the others, the CUDA contexts and the mapped
shared buffers. `nvidia-smi` sees the whole device; it is sampled on a thread twice a
second, so a peak shorter than that can slip through: the numbers are a floor.

    with MemoryPeak() as peak:
        ...
    print(peak.text())
"""

from __future__ import annotations

import shutil
import subprocess
import threading


def used_mib() -> dict[int, tuple[int, int]] | None:
    """Returns {GPU index: (MiB used, MiB total)}, or None without `nvidia-smi`."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,memory.used,memory.total",
             "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10,
            check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = {}
    for line in listing.splitlines():
        index, used, total = (int(field) for field in line.split(","))
        found[index] = (used, total)
    return found


class MemoryPeak:
    """Samples every GPU's used memory while the `with` block runs; keeps the highest."""

    def __init__(self, period_s: float = 0.5):
        self.period_s = period_s
        self.peak_mib: dict[int, int] = {}
        self.total_mib: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="memory-peak")

    def __enter__(self) -> "MemoryPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _sample(self) -> None:
        while not self._stop.is_set():
            seen = used_mib()
            if seen is None:
                return
            for index, (used, total) in seen.items():
                self.peak_mib[index] = max(used, self.peak_mib.get(index, 0))
                self.total_mib[index] = total
            self._stop.wait(self.period_s)

    def text(self) -> str:
        """Returns "GPU 0: 61.2 / 139.8 GiB, ..." or why there is no number."""
        if not self.peak_mib:
            return "not sampled (no nvidia-smi)"
        return ", ".join(f"GPU {index}: {self.peak_mib[index] / 1024:.1f} / "
                         f"{self.total_mib[index] / 1024:.1f} GiB"
                         for index in sorted(self.peak_mib))
