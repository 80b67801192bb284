"""`evo run`'s log in the results folder (DIR/evo-run.log): when each run started, and the
traceback of a run that failed.

Why room is reserved when the run starts: the commonest fatal cause is a full disk, and
then the results folder has no room left for the traceback that explains it. `open`
allocates RESERVE_BYTES in a hidden file beside the log (RESERVE_NAME), not in the log
itself: a run killed outright (kill -9, a dead Ray) never gives the room back, and room
inside the log would stay there as NUL bytes, through every later run. `write` deletes
the reserve, so its room takes the traceback, then appends; `release` deletes it unused.
If the log still cannot be written, the traceback goes to a file in the temporary folder
and its path is returned instead.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

LOG_NAME = "evo-run.log"
RESERVE_NAME = ".evo-run.reserve"
RESERVE_BYTES = 256 * 1024


class RunLog:
    """The log of one `evo run`, its start written and room kept for a traceback (see the
    module docstring)."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOG_NAME
        self._reserve = Path(folder) / RESERVE_NAME
        with contextlib.suppress(OSError):  # no room even now: write() falls back
            _drop_nul_tail(self.path)
            with open(self.path, "a") as log:
                log.write(f"--- evo run started at {_now()} (process {os.getpid()})\n")
            with open(self._reserve, "wb") as reserve:
                os.posix_fallocate(reserve.fileno(), 0, RESERVE_BYTES)

    def write(self, text: str) -> Path:
        """Appends `text` to the log, in the reserved room; returns the file it landed in."""
        data = f"--- evo run failed at {_now()}\n{text.rstrip()}\n".encode()
        self.release()
        try:
            with open(self.path, "ab") as log:
                log.write(data)
            return self.path
        except OSError:
            fd, fallback = tempfile.mkstemp(prefix="evo-run-", suffix=".log")
            with os.fdopen(fd, "wb") as log:
                log.write(data)
            return Path(fallback)

    def release(self) -> None:
        """Gives back the room no traceback needed (the log keeps what runs wrote)."""
        with contextlib.suppress(FileNotFoundError):
            self._reserve.unlink()


def _drop_nul_tail(path: Path) -> None:
    """Cuts the NUL bytes off the end of `path`: the room an earlier version reserved inside
    the log and never gave back when its run was killed."""
    with contextlib.suppress(FileNotFoundError), open(path, "r+b") as log:
        end = log.seek(0, os.SEEK_END)
        while end > 0:
            step = min(end, 64 * 1024)
            log.seek(end - step)
            chunk = log.read(step)
            kept = len(chunk.rstrip(b"\0"))
            end -= step - kept
            if kept:
                break
        log.truncate(end)


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")
