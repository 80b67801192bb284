"""What the judge remembers across candidates: what each task's reference gave on this
device (its timings, an external task's outputs), computed once however many walks ask, and
the best median seen per (task, case, device, harness version), which lets a clear loser
stop being timed early.
"""

from __future__ import annotations

import concurrent.futures
import threading


class ReferenceMemo:
    """Reference results per key, each computed by one job however many walks ask at once.
    A failure of a type in `kept` (the reference itself is broken) is remembered and raised
    to every later ask; after any other (a process died beside it) the next ask computes
    the result anew."""

    def __init__(self, runner: concurrent.futures.Executor, kept: tuple = ()):
        self._runner = runner
        self._kept = kept
        self._lock = threading.Lock()
        self._jobs: dict[tuple, concurrent.futures.Future] = {}

    def start(self, key: tuple, compute) -> concurrent.futures.Future:
        """Returns the job of `key`, submitted to the runner now unless one is under way or
        has an answer to keep: a walk starts it early and waits for it only when it must."""
        with self._lock:
            job = self._jobs.get(key)
            if not self._answered(job):
                job = self._jobs[key] = self._runner.submit(compute)
            return job

    def get(self, key: tuple, compute):
        """Returns the result of `key`, computed in this thread unless another job has it."""
        with self._lock:
            job = self._jobs.get(key)
            mine = not self._answered(job)
            if mine:
                job = self._jobs[key] = concurrent.futures.Future()
        if mine:
            try:
                job.set_result(compute())
            except BaseException as error:  # the job's answer, raised below to every asker
                job.set_exception(error)
        return job.result()

    def _answered(self, job: concurrent.futures.Future | None) -> bool:
        if job is None or job.cancelled():
            return False
        return not job.done() or job.exception() is None or isinstance(job.exception(), self._kept)


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
