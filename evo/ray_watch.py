"""A local Ray that dies under a running campaign (`ray stop --force`, the OOM killer) ends
it with one plain line, not in silence.

Why a watch of its own: once its GCS is gone, Ray's driver code ends this process about a
minute later from C++ (exit status 1, no Python `finally`, nothing said on the terminal),
while the campaign is still replacing actors that can never start again. So a thread looks
at the local Ray's GCS and raylet every POLL_S; once one has exited it calls `on_lost`
with the cause (the campaign logs it, records it and prints the line with the command that
continues), SIGKILLs what is left of that Ray and exits with fatal.EXIT_STATUS. Exiting
from the thread loses nothing recorded: Parquet parts and checkpoints are written
atomically (a temporary file, then a rename) and a resumed campaign removes temporaries.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from typing import Callable

from evo.fatal import EXIT_STATUS

POLL_S = 0.5
"""How often the watch looks at the local Ray's GCS and raylet."""

WATCHED = ("gcs_server", "raylet")
"""The processes without which a local Ray is gone (names as psutil reports them)."""


class Watch:
    """Watches the local Ray's `processes()` (psutil processes, Ray's and others) from a
    daemon thread until `stop`; see the module docstring."""

    def __init__(self, processes: Callable[[], list], on_lost: Callable[[str, str], None]):
        self._processes, self._on_lost = processes, on_lost
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="evo-ray-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ends the watch (before the campaign shuts its Ray down itself)."""
        self._stopped.set()
        self._thread.join()

    def _watch(self) -> None:
        watched: dict = {}  # psutil process -> its name, for the WATCHED ones seen running
        while not self._stopped.wait(POLL_S):
            watched.update(named(self._processes()))
            gone = sorted({name for process, name in watched.items() if not running(process)})
            if gone and not self._stopped.is_set():
                self._lost(gone)

    def _lost(self, gone: list[str]) -> None:
        cause = (f"the local Ray stopped under the campaign (its {' and '.join(gone)} exited: "
                 "`ray stop`, or killed by someone or out of memory)")
        main = sys._current_frames().get(threading.main_thread().ident)
        where = "".join(traceback.format_stack(main)) if main is not None else ""
        try:
            self._on_lost(cause, f"{cause}\nthe campaign was at:\n{where}")
        finally:
            for process in self._processes():
                with contextlib.suppress(Exception):  # gone already: nothing to do
                    process.kill()
            os._exit(EXIT_STATUS)


def named(processes: list) -> dict:
    """Returns the WATCHED processes among `processes`, each with its name."""
    import psutil  # Ray's own copy (ray/thirdparty_files) when none is installed

    found = {}
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if process.name() in WATCHED:
                found[process] = process.name()
    return found


def running(process) -> bool:
    """Returns True while `process` runs (a zombie, exited but not yet reaped, does not)."""
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
