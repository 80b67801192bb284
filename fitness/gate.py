"""The GPU gate: many holders share the device for compile/check, timing holds it alone.

A readers-writer lock that prefers the writer (a waiting timing run stops new shared
holders), and that also accounts the device's busy time: the union of intervals during
which anyone holds it.
"""

from __future__ import annotations

import contextlib
import threading
import time


class GpuGate:
    """Shared/exclusive access to one device, with busy-time accounting."""

    def __init__(self, exclusive_timing: bool = True, straggler_wait_s: float = 0.3):
        self._exclusive_timing = exclusive_timing
        self._straggler_wait_s = straggler_wait_s
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._writers_waiting = 0
        self._busy_since: float | None = None
        self._busy_s = 0.0

    def _enter(self) -> None:
        if self._shared == 0 and not self._exclusive:
            self._busy_since = time.monotonic()

    def _leave(self) -> None:
        if self._shared == 0 and not self._exclusive and self._busy_since is not None:
            self._busy_s += time.monotonic() - self._busy_since
            self._busy_since = None

    @contextlib.contextmanager
    def shared(self):
        """Holds the device alongside other shared holders (compile, correctness)."""
        with self._cond:
            while self._exclusive or self._writers_waiting:
                self._cond.wait()
            self._enter()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._leave()
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        """Holds the device alone (timing); a no-op share when timing is not meaningful."""
        if not self._exclusive_timing:
            with self.shared():
                yield
            return
        with self._cond:
            self._writers_waiting += 1
            while self._exclusive:
                self._cond.wait()
            # Shared holders finish one call each; a holder still there after
            # `straggler_wait_s` is compiling (a first call per shape is mostly Triton's
            # compiler, on the CPU: 1-2 s on an H200 host) or spinning until its stage limit
            # kills it. While timing waits, no new shared holder may start, so waiting them
            # out idled the whole pool (2 s per timing cost an H200 pool most of its
            # throughput); timing goes ahead beside them instead. Their device work is one
            # launch at the end of a compile; the median of the timed runs absorbs it, and
            # at worst the measurement is slower, never flattering.
            deadline = time.monotonic() + self._straggler_wait_s
            while self._shared and time.monotonic() < deadline:
                self._cond.wait(timeout=max(0.0, deadline - time.monotonic()))
            while self._exclusive:
                self._cond.wait()
            self._writers_waiting -= 1
            self._enter()
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._leave()
                self._cond.notify_all()

    def busy_s(self) -> float:
        """Returns the seconds during which the device had at least one holder."""
        with self._cond:
            running = time.monotonic() - self._busy_since if self._busy_since is not None else 0.0
            return self._busy_s + running
