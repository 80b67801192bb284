"""The device lock: many holders share the device for compile/check, timing holds it alone; a
readers-writer lock that prefers the writer and accounts the device's busy and waiting time.

Every hold is a walk's `with` around requests that end at their limits (the watchdog's
backstop included), so every wait here ends; `wait_limit_s` (the Evaluator's: a multiple of
the longest stage limit) is the bound that says so: a wait past it raises `DeviceHeld`, as a
device whose holders outlive every limit is not coming back."""

from __future__ import annotations

import contextlib
import threading
import time


class DeviceHeld(RuntimeError):
    """A wait for the device lock outlasted `DeviceLock.wait_limit_s`."""


class DeviceLock:
    """Shared/exclusive access to one device, with busy-time accounting.

    A timing run waits for short shared holders (device work from start to end) at most
    `straggler_wait_s`: past that, one is spinning until its stage limit kills it. It goes
    ahead beside compiling ones (mostly Triton's compiler on the CPU: waiting idled the
    pool, since no new holder starts while timing waits). It waits for loading ones (a
    candidate's import, which may launch device work) to the end. It yields the processes
    of the holders it goes ahead beside (`shared(process=...)`), for the timing to stop.

    A baseline's timing (`exclusive(alone=True)`, one hold for all its cases) waits for every
    holder to the end, compiling ones included: it is every speedup's denominator. It first
    waits out the `long` holders while short ones still come and go, then holds new ones
    back. A suite's reference run (`reference`: trusted, minutes at worst) is not waited for:
    the baseline goes ahead with every candidate worker stopped (`clock.time_case`).
    """

    def __init__(self, exclusive_timing: bool = True, straggler_wait_s: float = 0.3,
                 wait_limit_s: float = 3600.0):
        self._exclusive_timing = exclusive_timing
        self._straggler_wait_s = straggler_wait_s
        self._wait_limit_s = wait_limit_s
        self._cond = threading.Condition()
        self._timing = threading.Lock()  # the timing holds' own, where they share the device
        self._shared = 0
        self._compiling = 0
        self._loading = 0
        self._references = 0
        self._long = 0  # long holders a baseline's timing waits for (`shared(long=True)`)
        self._long_waiters = 0  # baselines' timings waiting them out
        self._processes: list = []  # the processes named by the shared holds under way
        self._exclusive = False
        self._writers_waiting = 0
        self._busy_since: float | None = None
        self._busy_s = 0.0
        self._exclusive_wait_s = 0.0
        self._drain_wait_s = 0.0
        self._stragglers = 0
        self._shared_wait_s = 0.0
        self._holds = 0

    def _wait(self, asked: float, timeout_s: float | None = None) -> None:
        """Waits on the condition `timeout_s` at most (None: until `wait_limit_s` after
        `asked`); raises DeviceHeld once `wait_limit_s` has passed since `asked`."""
        left_s = asked + self._wait_limit_s - time.monotonic()
        if left_s <= 0:
            raise DeviceHeld(f"the device lock was not free within {self._wait_limit_s:g} s: "
                             "a holder outlived every stage limit")
        self._cond.wait(left_s if timeout_s is None else min(timeout_s, left_s))

    def _enter(self) -> None:
        if self._shared == 0 and not self._exclusive:
            self._busy_since = time.monotonic()

    def _leave(self) -> None:
        if self._shared == 0 and not self._exclusive and self._busy_since is not None:
            self._busy_s += time.monotonic() - self._busy_since
            self._busy_since = None

    @contextlib.contextmanager
    def shared(self, compiling: bool = False, loading: bool = False, reference: bool = False,
               process=None, long: bool = False):
        """Holds the device alongside other shared holders; `compiling`: mostly CPU work
        (a first call that compiles), which a timing run does not wait for; `loading`: a
        candidate's import, which a timing run waits for to the end; `reference`: a suite's
        reference run, which a baseline's timing does not wait for; `process`: the worker
        whose device work the hold is for, or a tuple of them (a walk's worker and the
        checker that makes its inputs and reference outputs), named to a timing run that
        goes ahead beside it;
        `long`: seconds to minutes (a suite's test run, the recording of its timing code),
        held back while a baseline's timing waits for the long ones in to end."""
        asked = time.monotonic()
        counted = long and not reference
        named = process if isinstance(process, tuple) else () if process is None else (process,)
        with self._cond:
            while self._exclusive or self._writers_waiting or (long and self._long_waiters):
                self._wait(asked)
            self._shared_wait_s += time.monotonic() - asked
            self._enter()
            self._shared += 1
            self._compiling += compiling
            self._loading += loading
            self._references += reference
            self._long += counted
            self._processes.extend(named)
        try:
            yield
        finally:
            with self._cond:
                for one in named:
                    self._processes.remove(one)
                self._shared -= 1
                self._compiling -= compiling
                self._loading -= loading
                self._references -= reference
                self._long -= counted
                self._leave()
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self, alone: bool = False):
        """Holds the device alone (timing); yields the distinct processes of the shared
        holders still in when it was granted (stragglers, compiling ones; references beside
        a baseline), for the caller to stop. Where timing is not meaningful (the interpreter
        and ROCm: CPU time, read per process tree) it is a share that only other timing
        holds wait for, and yields none: one tree is timed at a time, the rest held stopped
        (`clock.time_case`), and two timing at once would each stop the other. `alone`: wait
        for every shared holder to leave, with no straggler cut-off and compiling holders
        included (a baseline's timing)."""
        if not self._exclusive_timing:
            asked = time.monotonic()
            if not self._timing.acquire(timeout=self._wait_limit_s):
                raise DeviceHeld(f"no timing hold came free within {self._wait_limit_s:g} s")
            try:
                with self._cond:
                    self._exclusive_wait_s += time.monotonic() - asked
                    self._holds += 1
                with self.shared():
                    yield []
            finally:
                self._timing.release()
            return
        asked = time.monotonic()
        with self._cond:
            if alone:  # the long holders first, short ones still going: each held every
                # walk back for the whole of a 10-s recording (RESULTS.md §36)
                self._long_waiters += 1
                try:
                    while self._long:
                        self._wait(asked)
                finally:
                    self._long_waiters -= 1
            self._writers_waiting += 1
            try:
                self._drain(asked, alone)
            finally:
                self._writers_waiting -= 1
                self._cond.notify_all()
            self._enter()
            self._exclusive = True
            self._exclusive_wait_s += time.monotonic() - asked
            self._holds += 1
            beside = list({id(process): process for process in self._processes}.values())
        try:
            yield beside
        finally:
            with self._cond:
                self._exclusive = False
                self._leave()
                self._cond.notify_all()

    def _drain(self, asked: float, alone: bool) -> None:
        """`exclusive`'s wait, the condition held: for an exclusive holder, then for shared
        holders as the class docstring says, then for an exclusive holder again."""
        while self._exclusive:
            self._wait(asked)
        draining = time.monotonic()
        deadline = draining + self._straggler_wait_s
        while True:
            if alone:
                if self._shared == self._references:
                    break
                self._wait(asked)
                continue
            left_s = deadline - time.monotonic()
            short = self._shared - self._compiling - self._loading > 0 and left_s > 0
            if not (short or self._loading):
                break
            self._wait(asked, max(0.0, left_s) if short else None)
        self._stragglers += self._shared - self._compiling - self._loading > 0
        self._drain_wait_s += time.monotonic() - draining
        while self._exclusive:
            self._wait(asked)

    def counters(self) -> dict:
        """Returns the seconds during which the device had a holder ("busy_s"); the seconds
        timing runs waited for it ("timing_wait_s": meanwhile no new shared holder starts),
        of which spent draining short shared holders ("drain_wait_s"); the timing runs that
        went ahead beside one still in after `straggler_wait_s` ("stragglers", stopped by
        `clock.time_case` where it named its process); and the
        seconds shared holders waited while a timing run waited or ran ("walk_wait_s"); and
        the timing holds granted ("timing_holds": each waited for the device to drain)."""
        with self._cond:
            running = time.monotonic() - self._busy_since if self._busy_since is not None else 0.0
            return {"busy_s": self._busy_s + running, "timing_wait_s": self._exclusive_wait_s,
                    "drain_wait_s": self._drain_wait_s, "stragglers": self._stragglers,
                    "walk_wait_s": self._shared_wait_s, "timing_holds": self._holds}
