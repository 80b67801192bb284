"""Stop signals: SIGTERM and a first SIGINT ask the campaign to stop at its last checkpoint.

Why a flag and not an exception raised by the handler: a handler runs between any two
bytecodes, so raising there could cut a Parquet part or a checkpoint in half and leave Ray
calls half made. The handler only records the signal; the campaign loop looks at it
(`check`) between steps, where nothing is half written, and unwinds with `Stopped`, so the
actors and a local Ray are stopped on the way out. A second SIGINT is the user insisting:
the process exits at once (status 130), after SIGKILLing what `on_second_sigint` names
(a local Ray's processes), which would otherwise linger for a minute.

Ray's `ray.init` installs its own SIGTERM handlers (exit at once), so `install` is called
again once Ray is up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

EXIT_STATUS = {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 128 + signal.SIGINT}
"""Exit status of a campaign stopped by each signal (143, 130), as a shell reports a death
by that signal."""

_requested: signal.Signals | None = None
_listening = False
_kill_at_once: list = []  # callables returning processes (psutil) to SIGKILL on a second SIGINT


class Stopped(BaseException):
    """The campaign stopped on a signal (a BaseException, like KeyboardInterrupt, so no
    `except Exception` on the way out swallows it)."""

    def __init__(self, signum: signal.Signals):
        super().__init__(f"stopped by {signum.name}")
        self.signal = signum
        self.exit_status = EXIT_STATUS[signum]


def _handle(signum: int, _frame) -> None:
    global _requested
    signum = signal.Signals(signum)
    if _requested is not None:
        if signum == signal.SIGINT:
            sys.stderr.write("second SIGINT: exiting now, killing the local Ray's processes\n")
            sys.stderr.flush()
            for processes in _kill_at_once:
                listed = []
                with contextlib.suppress(Exception):  # a failed listing must not stop the exit
                    listed = processes()
                for process in listed:
                    with contextlib.suppress(Exception):  # gone already: nothing to do
                        process.kill()
            os._exit(EXIT_STATUS[signal.SIGINT])
        return
    _requested = signum
    again = " (SIGINT again exits at once)" if signum == signal.SIGINT else ""
    sys.stderr.write(f"{signum.name} received: stopping at the last checkpoint{again}\n")
    sys.stderr.flush()


def install() -> None:
    """Points SIGTERM and SIGINT at the stop flag, inside `listening` and in the main thread
    only (elsewhere a no-op: the caller's handlers stand)."""
    if not _listening:
        return
    with contextlib.suppress(ValueError):  # not the main thread: the caller's own handlers
        for signum in EXIT_STATUS:
            signal.signal(signum, _handle)


@contextlib.contextmanager
def listening():
    """Installs the stop handlers for the block, then puts the previous ones back."""
    global _requested, _listening
    if _listening:  # nested (a sweep's cell): the outer block handles the signals
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in EXIT_STATUS}
    _requested, _listening = None, True
    install()
    try:
        yield
    finally:
        # After a stop the process is on its way out (Ray's and torch's exit handlers: seconds),
        # and a second SIGINT there must still exit at once: SIGINT stays ours, and the stop
        # stays recorded until the next block begins
        stopped = _requested is not None
        with contextlib.suppress(ValueError, TypeError):
            for signum, handler in previous.items():
                if not (stopped and signum == signal.SIGINT):
                    signal.signal(signum, handler)
        _listening = False
        if not stopped:
            _requested = None


@contextlib.contextmanager
def on_second_sigint(processes):
    """Inside the block, a second SIGINT SIGKILLs what `processes()` returns before exiting."""
    _kill_at_once.append(processes)
    try:
        yield
    finally:
        _kill_at_once.remove(processes)


def exit_now(status: int) -> None:
    """Ends a process whose campaign a signal stopped, once its last line is out: its logs
    flushed, then `os._exit`. Why not the interpreter's own exit: with a local Ray it spent
    2.7 s in teardown that runs no Python, where a second SIGINT found no handler to run
    (CI: the clean stop ended within 0.2 s of the first SIGINT, the second waited out the
    teardown). Everything a stop keeps is written and the local Ray reaped before the line."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed stream: nothing left to flush
            stream.flush()
    os._exit(status)


def check() -> None:
    """Raises Stopped if a stop signal came since `listening` began."""
    if _requested is not None:
        raise Stopped(_requested)
