"""Walks side by side, or one alone: a candidate's walk that ran out of device memory beside
the others is tried once more with the device to itself.

A GPU's memory is shared by every worker and checker of the pool, and the walks beside one
(inputs of a GiB and more a case, GEAK's performance inputs) can leave it none: 12 of the 56
TritonBench-revised references left untimed in three calls ran out of memory with 12 walks
at once on 140 GiB (RESULTS.md §32), and a second try beside the same neighbours mostly met
them again. Only top-level walks pass the gate (`walk.walk`); a task's baseline
job does not, so a walk alone that waits for its baseline's numbers gets them.
"""

from __future__ import annotations

import contextlib
import threading
import time

ALONE_WAIT_S = 900.0
"""How long a walk waits for the walks under way to end before it goes without the device
to itself: each ends within its stages' limits, the slowest external ones' minutes."""


class WalkGate:
    """Counts the walks under way; `alone` waits until none is, and holds new ones back
    meanwhile (a waiting `alone` goes first)."""

    def __init__(self, wait_s: float = ALONE_WAIT_S):
        self._wait_s = wait_s
        self._cond = threading.Condition()
        self._running = 0
        self._alone = False
        self._waiting = 0

    @property
    def held_alone(self) -> bool:
        """Whether a walk has the device to itself now (asked by that walk: no other runs)."""
        return self._alone

    @contextlib.contextmanager
    def side_by_side(self):
        """Holds one of any number of walks under way at once."""
        with self._cond:
            while self._alone or self._waiting:
                self._cond.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def alone(self):
        """Holds the only walk under way, once the others have ended; yields whether it
        does (False: they outlasted `wait_s`, and it goes beside them)."""
        deadline = time.monotonic() + self._wait_s
        with self._cond:
            self._waiting += 1
            try:
                while (self._alone or self._running) and time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
            finally:
                self._waiting -= 1
                self._cond.notify_all()
            got = not (self._alone or self._running)
            if got:
                self._alone = True
            else:
                self._running += 1
        try:
            yield got
        finally:
            with self._cond:
                if got:
                    self._alone = False
                else:
                    self._running -= 1
                self._cond.notify_all()
