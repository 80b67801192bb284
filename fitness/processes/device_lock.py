"""The device lock: many holders share the device for compile/check, timing holds it alone.

A readers-writer lock that prefers the writer (a waiting timing run stops new shared
holders), and that also accounts the device's busy time (the union of intervals during
which anyone holds it) and the time timing runs and shared holders spent waiting for it.
"""

from __future__ import annotations

import contextlib
import threading
import time


class DeviceLock:
    """Shared/exclusive access to one device, with busy-time accounting.

    Shared holders are of two kinds. Short ones (a checker's prepare or compare, a
    candidate's call on compiled code) run device work from start to end, and a timing run
    waits for them, at most `straggler_wait_s` (past that, a holder is spinning until its
    stage limit kills it). Compiling ones (a first call that is mostly Triton's compiler on
    the CPU) have one launch at their very end; waiting for them idled the pool, since no new holder may start while
    timing waits, so timing goes ahead beside them. Their one launch may overlap a timed
    batch: the median of the timed runs absorbs it, and at worst a measurement is slower.
    Loading ones (importing a candidate) are waited for however long they take: a module
    may launch device work at import (a spin to slow whatever is timed beside it), and the
    worker ends the load only once that work is done, so no timing, a candidate's or a
    baseline's, runs beside it. An import is short; the stall watch and the import limit
    bound one that is not.
    """

    def __init__(self, exclusive_timing: bool = True, straggler_wait_s: float = 0.3):
        self._exclusive_timing = exclusive_timing
        self._straggler_wait_s = straggler_wait_s
        self._cond = threading.Condition()
        self._shared = 0
        self._compiling = 0
        self._loading = 0
        self._exclusive = False
        self._writers_waiting = 0
        self._busy_since: float | None = None
        self._busy_s = 0.0
        self._exclusive_wait_s = 0.0
        self._drain_wait_s = 0.0
        self._stragglers = 0
        self._shared_wait_s = 0.0

    def _enter(self) -> None:
        if self._shared == 0 and not self._exclusive:
            self._busy_since = time.monotonic()

    def _leave(self) -> None:
        if self._shared == 0 and not self._exclusive and self._busy_since is not None:
            self._busy_s += time.monotonic() - self._busy_since
            self._busy_since = None

    @contextlib.contextmanager
    def shared(self, compiling: bool = False, loading: bool = False):
        """Holds the device alongside other shared holders; `compiling`: mostly CPU work
        (a first call that compiles), which a timing run does not wait for; `loading`: a
        candidate's import, which a timing run waits for to the end."""
        asked = time.monotonic()
        with self._cond:
            while self._exclusive or self._writers_waiting:
                self._cond.wait()
            self._shared_wait_s += time.monotonic() - asked
            self._enter()
            self._shared += 1
            self._compiling += compiling
            self._loading += loading
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._compiling -= compiling
                self._loading -= loading
                self._leave()
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        """Holds the device alone (timing); a no-op share when timing is not meaningful."""
        if not self._exclusive_timing:
            with self.shared():
                yield
            return
        asked = time.monotonic()
        with self._cond:
            self._writers_waiting += 1
            while self._exclusive:
                self._cond.wait()
            draining = time.monotonic()
            deadline = draining + self._straggler_wait_s
            while True:
                left_s = deadline - time.monotonic()
                short = self._shared - self._compiling - self._loading > 0 and left_s > 0
                if not (short or self._loading):
                    break
                self._cond.wait(timeout=max(0.0, left_s) if short else None)
            self._stragglers += self._shared - self._compiling - self._loading > 0
            self._drain_wait_s += time.monotonic() - draining
            while self._exclusive:
                self._cond.wait()
            self._writers_waiting -= 1
            self._enter()
            self._exclusive = True
            self._exclusive_wait_s += time.monotonic() - asked
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._leave()
                self._cond.notify_all()

    def drain_wait_s(self) -> float:
        """Returns the seconds timing runs spent waiting for short shared holders to end:
        the part of `exclusive_wait_s` not spent behind another timing run, during which
        no new holder may start and the device may idle."""
        with self._cond:
            return self._drain_wait_s

    def stragglers(self) -> int:
        """Returns how many timing runs went ahead beside a short shared holder that was
        still in after `straggler_wait_s`."""
        with self._cond:
            return self._stragglers

    def busy_s(self) -> float:
        """Returns the seconds during which the device had at least one holder."""
        with self._cond:
            running = time.monotonic() - self._busy_since if self._busy_since is not None else 0.0
            return self._busy_s + running

    def shared_wait_s(self) -> float:
        """Returns the seconds shared holders have waited for the device, all of them
        together: walks held back while a timing run waited or ran."""
        with self._cond:
            return self._shared_wait_s

    def exclusive_wait_s(self) -> float:
        """Returns the seconds timing runs have waited for the device, all of them together
        (while one waits, no new shared holder starts: the pool's cost of exclusivity)."""
        with self._cond:
            return self._exclusive_wait_s
