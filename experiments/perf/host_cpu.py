"""How busy the host's cores were while a benchmark ran, read from /proc/stat.

A pool runs its walks' host work (Triton compiling, the checkers' Python, worker start-ups,
the sandbox) on the same cores as the threads that drive timing and comparisons. When the
cores are saturated every holder of the device slows down, and that looks from inside like
the device being the bottleneck. Sampled from outside every process, twice a second:

    with HostCpu() as cpu:
        ...
    print(cpu.text())
"""

from __future__ import annotations

import os
import statistics
import threading


def _busy_and_total() -> tuple[int, int] | None:
    """Returns the (busy, total) jiffies of all cores since boot, or None off Linux."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(field) for field in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


class HostCpu:
    """Samples the share of all cores busy in each period while the `with` block runs."""

    def __init__(self, period_s: float = 0.5):
        self.period_s = period_s
        self.busy_shares: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="host-cpu")

    def __enter__(self) -> "HostCpu":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

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
