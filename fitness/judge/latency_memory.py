"""What the judge remembers about latencies across candidates, per (task, case, device,
harness version): the baseline's stats, timed once by a trusted checker, and the best median
seen so far, which lets a clear loser stop being timed early.
"""

from __future__ import annotations

import threading


class BaselineCache:
    """Baseline latency stats keyed by (task, case, device, harness version)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stats: dict[tuple[str, str, str, str], dict] = {}

    def get(self, key) -> dict | None:
        with self._lock:
            return self._stats.get(key)

    def put_first(self, key, stats: dict) -> None:
        with self._lock:
            self._stats.setdefault(key, stats)


GIVE_UP_FACTOR = 1.2
"""A case whose latency is surely above this multiple of the best seen for it (baseline
or an earlier candidate) stops being timed after its first batch: its median is still real,
only less precise, and no selection decision rides on a clear loser's exact number."""


class BestLatency:
    """The lowest median latency seen per (task, case, device, harness version): the
    baseline's, then any timed candidate's that passed its re-check."""

    def __init__(self):
        self._lock = threading.Lock()
        self._best: dict[tuple, float] = {}

    def get(self, key) -> float | None:
        with self._lock:
            return self._best.get(key)

    def offer(self, key, median_us: float) -> None:
        with self._lock:
            if median_us < self._best.get(key, float("inf")):
                self._best[key] = median_us
