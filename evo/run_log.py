"""`evo run`'s log in the results folder (DIR/evo-run.log): the traceback of a run that failed.

Why room is reserved when the run starts: the commonest fatal cause is a full disk, and
then the results folder has no room left for the traceback that explains it. `open`
allocates RESERVE_BYTES at the end of the log at once; `write` puts the traceback into
that room (growing it only if it is longer) and `release` gives the unused room back. If
the log still cannot be written, the traceback goes to a file in the temporary folder and
its path is returned instead.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

LOG_NAME = "evo-run.log"
RESERVE_BYTES = 256 * 1024


class RunLog:
    """The log of one `evo run`, with its room reserved (see the module docstring)."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOG_NAME
        self._start: int | None = None
        with contextlib.suppress(OSError):  # no room even now: write() falls back
            with open(self.path, "ab") as log:
                self._start = log.seek(0, os.SEEK_END)
                os.posix_fallocate(log.fileno(), self._start, RESERVE_BYTES)

    def write(self, text: str) -> Path:
        """Writes `text` into the reserved room; returns the file it landed in."""
        data = f"--- evo run failed at {time.strftime('%Y-%m-%d %H:%M:%S')}\n{text}".encode()
        try:
            if self._start is None:
                raise OSError("no room was reserved")
            with open(self.path, "r+b") as log:
                log.seek(self._start)
                log.write(data)
                log.truncate(self._start + len(data))
            self._start = None
            return self.path
        except OSError:
            fd, fallback = tempfile.mkstemp(prefix="evo-run-", suffix=".log")
            with os.fdopen(fd, "wb") as log:
                log.write(data)
            return Path(fallback)

    def release(self) -> None:
        """Gives back the room no traceback needed (the log keeps what earlier runs wrote)."""
        if self._start is None:
            return
        with contextlib.suppress(OSError):
            os.truncate(self.path, self._start)
            if self._start == 0:
                self.path.unlink()
        self._start = None
