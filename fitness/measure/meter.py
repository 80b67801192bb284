"""One meter for where an Evaluator's time goes: the wall time of each kind of request, the
phases processes say they spent, the device's useful work and the walks tried again. For
diagnosis only: no verdict reads it."""

from __future__ import annotations

import collections
import threading
import time

TIMED_CASES = 4096
"""Timed cases the meter's log keeps, the latest (`Meter.timed_case`)."""

SPENT_PHASES = frozenset({
    "prepare", "warm", "settle", "timed", "buffers", "release", "all",  # timing.SPENT_S
    "cpu", "system", "queued", "make", "reference", "allocate", "pack", "export", "uncache",
    "read", "judge", "digest",  # the checker's prepare and compare
    "stage", "fill", "snapshot", "free",  # the checker's timed batch
    "map", "warmup",  # a worker's timed_stage
    "capture", "begin", "runs", "instantiate"})  # its timed_capture, whole and in parts
"""The phases a reply may report in "spent_s"; a worker naming others is ignored, so it
cannot fill the Evaluator's stats with names of its own."""


class Meter:
    """Thread-safe counters, read whole by `snapshot`."""

    def __init__(self):
        self._lock = threading.Lock()
        self.retries = 0
        self.kernel_s = 0.0  # device time of timed runs, candidates' and baselines'
        self.request_s: dict[str, float] = {}  # "role.op[.mode]" -> wall seconds of its requests
        self.requests: dict[str, int] = {}
        # task -> "role.op[.mode]" -> seconds: its walks', baselines' and references' together
        self.task_request_s: dict[str, dict[str, float]] = {}
        self._timed_cases: collections.deque = collections.deque(maxlen=TIMED_CASES)

    def request(self, name: str, seconds: float, task: str | None = None) -> None:
        """Adds one request's wall time to `request_s` (where a verdict's time goes), and to
        `task`'s (where one task's evaluations spent theirs: a reference whose scoring takes
        minutes says on what)."""
        with self._lock:
            self.request_s[name] = self.request_s.get(name, 0.0) + seconds
            self.requests[name] = self.requests.get(name, 0) + 1
            if task is not None:
                spent = self.task_request_s.setdefault(task, {})
                spent[name] = spent.get(name, 0.0) + seconds

    def spent(self, request_name: str, reply: dict) -> None:
        """Adds the phases a reply says it spent to `request_s` as "<request>.<phase>":
        where timing's seconds go (`timing.accounted`), and how much of a checker's request
        it spent working ("all") rather than in transit or waiting. A worker's numbers are
        its own word."""
        spent = reply.get("spent_s")
        for phase, seconds in (spent.items() if isinstance(spent, dict) else ()):
            if phase in SPENT_PHASES and isinstance(seconds, (int, float)):
                self.request(f"{request_name}.{phase}", float(seconds))

    def kernel_time(self, stats: list[dict]) -> None:
        """Adds timed runs (runs x median) to `kernel_s`: the device's useful work, as
        opposed to the time a lock was held around it."""
        with self._lock:
            self.kernel_s += sum(s["runs"] * s["median_us"] for s in stats) * 1e-6

    def timed_case(self, entry: dict) -> None:
        """Logs one timed case (`clock.time_case`: its task, case, candidate id, every
        batch's per-run microseconds and fill GB/s, the holders it went ahead beside, its
        stats) with the monotonic and the wall time it ended: which copies of one kernel
        read apart, and what their batches say about why."""
        with self._lock:
            self._timed_cases.append({"at": time.monotonic(), "wall": time.time(), **entry})

    def timed_cases(self) -> list[dict]:
        with self._lock:
            return list(self._timed_cases)

    def retry(self) -> None:
        with self._lock:
            self.retries += 1

    def snapshot(self) -> dict:
        with self._lock:
            return {"retries": self.retries, "kernel_s": self.kernel_s,
                    "request_s": dict(self.request_s), "requests": dict(self.requests),
                    "task_request_s": {task: dict(spent) for task, spent in self.task_request_s.items()}}
