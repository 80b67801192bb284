"""The watchdog: every request to a worker or checker ends by its limit plus `GRACE_S`, whoever
waits on it, and every ended process is reaped without anyone waiting for it.

The thread that sends a request normally waits for its reply and ends the process at the
limit itself (`pool.WorkerProcess._await_reply`). But a walk may be waiting on something else
meanwhile (a GPU batch waits on the checker while the worker's kernel runs), and a process
may be in any state: a kernel still running, stopped with SIGSTOP, ignoring SIGTERM, in an
autotune. So each request is also armed here, on one thread of the engine's own: past its
deadline plus `GRACE_S` the process's whole tree gets SIGKILL (which no process can catch,
block or sleep through while stopped), from outside, whatever its walk is doing.

Ending never waits for the exit: a process killed inside a GPU driver call can take long to
die (its context torn down), and a walk that waited for it held the device lock meanwhile.
`reap` waits on a thread of its own; a process still there `STUCK_S` after its SIGKILL is
reported: its device is not coming back (the Evaluator stops using it).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import signal
import subprocess
import threading
import time

GRACE_S = 2.0
"""Seconds past a request's limit at which the watchdog ends the process if its walk has not:
the waiting thread ends it at the limit; this covers a walk waiting on anything else."""
STUCK_S = 30.0
"""Seconds after its SIGKILL past which a process that has not exited is stuck: it is inside
a device driver that cannot tear its context down (a kernel that does not stop)."""


def end_tree(pids: list[int], group: int | None = None) -> None:
    """SIGKILLs every process of `pids` and the process group `group`, if one is given."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    if group is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


class Watchdog:
    """Deadlines of requests under way; `arm` one, `disarm` it when its reply came (or the
    process was ended). One thread sleeps until the earliest deadline and, past it, calls
    the request's `end(reason)`."""

    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, object, str]] = []
        self._armed: set[int] = set()  # tickets armed and not yet due
        self._tickets = itertools.count()
        self.ended = 0
        threading.Thread(target=self._watch, daemon=True, name="watchdog").start()

    def arm(self, limit_s: float, what: str, end, extension=lambda: 0.0) -> int:
        """Returns a ticket: `end(reason)` is called `limit_s + GRACE_S` from now unless the
        ticket is disarmed first; `what` names the request in the reason. `extension()`
        says how far the deadline has moved since (the seconds the judge held the process
        stopped: a stopped process runs none of its limit)."""
        ticket = next(self._tickets)
        deadline = time.monotonic() + limit_s + GRACE_S
        reason = (f"{what} ran past its {limit_s:g} s limit + {GRACE_S:g} s grace: its process "
                  "tree was ended by the watchdog")
        with self._cond:
            self._armed.add(ticket)
            heapq.heappush(self._heap, (deadline, ticket, (end, extension, 0.0), reason))
            self._cond.notify()
        return ticket

    def disarm(self, ticket: int | None) -> None:
        if ticket is not None:
            with self._cond:
                self._armed.discard(ticket)

    def _watch(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(self._heap[0][0] - time.monotonic() if self._heap else 1.0)
                deadline, ticket, (end, extension, applied), reason = heapq.heappop(self._heap)
                moved = extension() - applied if ticket in self._armed else 0.0
                if moved > 0:  # not due yet: back in the heap at its moved deadline
                    heapq.heappush(self._heap, (deadline + moved, ticket,
                                                (end, extension, applied + moved), reason))
                    continue
                due = ticket in self._armed
                self._armed.discard(ticket)
            if due:
                self.ended += 1
                end(reason)


WATCHDOG = Watchdog()
"""The engine's one watchdog (a thread, started at import)."""

def reap(proc: subprocess.Popen, tree: list[int], then, on_stuck) -> None:
    """Waits on a thread of its own until an ended process and every process of its `tree`
    (read before the SIGKILL: a sandbox's outer process dies at once, the GPU process inside
    it may not) are gone, then calls `then()` (removes its directories). If one is still
    there `STUCK_S` after the end, `on_stuck(seconds, pids still there)` is called first
    (at once when `STUCK_S` is 0: the first look is made here); the wait goes on,
    bounded (`STUCK_S` times `_STUCK_WAITS`)."""
    started = {pid: start_time(pid) for pid in tree}
    ended = time.monotonic()
    reported = []

    def gone() -> bool:
        """Whether all are gone; past `STUCK_S` (first looked at here, at the end) says so once."""
        proc.poll()  # reaps the leader
        alive = [pid for pid, since in started.items() if since and start_time(pid) == since]
        if proc.returncode is not None and not alive:
            return True
        if not reported and time.monotonic() - ended >= STUCK_S:
            reported.append(True)
            on_stuck(STUCK_S, alive or [proc.pid])
        return False

    def wait() -> None:
        while not gone() and time.monotonic() - ended < STUCK_S * _STUCK_WAITS:
            time.sleep(_REAP_POLL_S)
        then()

    gone()
    threading.Thread(target=wait, daemon=True, name=f"reap-{proc.pid}").start()


def start_time(pid: int) -> int | None:
    """Returns when process `pid` started (clock ticks since boot: tells a reused pid from
    it), None once it is gone or a zombie (its exit is done)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


_REAP_POLL_S = 0.05
_STUCK_WAITS = 120
"""How many `STUCK_S` a reaper waits for a stuck process before it gives up on it (an hour)."""
