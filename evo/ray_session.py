"""Connecting a campaign to Ray: the caller's, a cluster's, or a local one that is closed and quiet.

A local Ray listens on loopback only (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0) and admits only
processes holding its token. Left to itself Ray writes that token to ~/.ray/auth_token
(readable by the machine's other users unless the home folder is closed) and logs on every
start that it turned authentication on. So a local Ray gets a token made for this process
(RAY_AUTH_TOKEN: Ray's processes inherit it; the sandbox's environment is an allowlist) and
that notice is dropped. Not RAY_AUTH_MODE=token: Ray reads its config when imported, before
the driver knows it will start a local Ray. A user's RAY_AUTH_* settings are left alone; a
cluster (`--address`) uses whatever its nodes were set up with.

`ray.shutdown` does not wait for a local Ray's raylet, GCS or workers, so they are waited on
for at most REAP_WAIT_S, then killed. A cluster is only disconnected from.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
from typing import Callable

import ray

from evo import ray_watch, stopping
from evo.fatal import Fatal

_RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_DEFAULT_ON_NOTICE = "Token authentication is enabled for this Ray cluster"


REAP_WAIT_S = 5.0
"""Longest wait for a local Ray's processes to exit after `ray.shutdown` before SIGKILL."""
GCS_TASK_EVENTS_KEPT = 2000
"""Task events a local Ray's GCS keeps for `ray list tasks`: a campaign runs several Ray tasks
a candidate, and Ray's default (100,000) let the GCS grow all night."""


@contextlib.contextmanager
def session(address: str | None, on_lost: Callable[[str, str], None] | None = None):
    """Connects to Ray for the campaign: the caller's, a cluster at `address`, or a local one
    on loopback (shut down afterwards, and watched meanwhile: if it dies, `on_lost` is
    called with the cause and what to log, and the process exits; see `evo.ray_watch`)."""
    if ray.is_initialized():
        yield
        return
    before = {process.pid for process in _children()} if address is None else set()
    try:
        if address is None:
            _configure_local()
            ray.init(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
        else:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except SystemExit:  # a SIGTERM met the handlers ray.init installs while it starts
        ray.shutdown()
        raise stopping.Stopped(signal.SIGTERM) from None
    except Exception as error:  # Ray raises several kinds; all mean the same to the user
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise Fatal(f"could not start {where}: {type(error).__name__}: {error}") from error
    stopping.install()  # ray.init put its own SIGTERM handler in place of ours
    seen: dict = {}  # pid -> psutil.Process: every process of the local Ray listed so far

    def started() -> list:
        """The local Ray's processes: those it runs now and every one listed before. Once
        the raylet is gone its agents are no longer this process's descendants, so a list
        taken before `ray.shutdown` keeps them (psutil checks a pid is not reused on kill)."""
        if address is None:
            for process in _children():
                if process.pid not in before:
                    seen.setdefault(process.pid, process)
        return list(seen.values())

    # One block from here to the end of the shutdown: a second SIGINT that lands between
    # two blocks would find nothing to kill, and the raylet's agents would outlive the run.
    with stopping.on_second_sigint(started):
        watch = ray_watch.Watch(started, on_lost) if address is None and on_lost else None
        try:
            stopping.check()  # a signal came while Ray started: stop before any actor does
            yield
        finally:
            if watch is not None:
                watch.stop()  # before the GCS and raylet go on purpose
            processes = started()  # before the raylet goes
            ray.shutdown()
            _reap(processes)


def _children() -> list:
    """Returns this process's descendants: once a local Ray is up, its GCS, raylet, workers
    and actors, beside any the caller had started before (which `session` leaves alone)."""
    import psutil  # Ray's own copy (ray/thirdparty_files) when none is installed

    return psutil.Process().children(recursive=True)


def _reap(processes: list) -> None:
    """Waits at most REAP_WAIT_S for `processes` to exit, then SIGKILLs those left."""
    import psutil

    _, alive = psutil.wait_procs(processes, timeout=REAP_WAIT_S)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=REAP_WAIT_S)


def _configure_local() -> None:
    """Sets up what a local Ray starts from; kept for the process, so a second local Ray in
    it (a sweep's next cell) finds the token Ray has cached."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ.setdefault("RAY_task_events_max_num_task_in_gcs", str(GCS_TASK_EVENTS_KEPT))
    if "RAY_AUTH_TOKEN" not in os.environ and "RAY_AUTH_TOKEN_PATH" not in os.environ:
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    logging.getLogger(_RAY_AUTH_LOGGER).addFilter(_not_the_default_on_notice)  # added once


def _not_the_default_on_notice(record: logging.LogRecord) -> bool:
    """Drops Ray's notice that it turned token authentication on (here it is on by design);
    every other message of Ray's authentication code still shows."""
    return not record.getMessage().startswith(_DEFAULT_ON_NOTICE)
