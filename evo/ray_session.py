"""Connecting a campaign to Ray: the caller's, a cluster's, or a local one that is closed and quiet.

A local Ray listens on loopback only (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0; without it Ray binds
the machine's external address) and, as Ray does by default since token authentication
came in, admits only processes holding its token. Left to itself Ray then writes a token to
~/.ray/auth_token (readable by the machine's other users unless the home folder is closed
to them) and logs, on every start, that it turned authentication on ("Token authentication
is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out"), a notice with
nothing for a KernelEvo user to do. So a local Ray gets a token made for this process
(RAY_AUTH_TOKEN: Ray's processes inherit it, nothing else does, since the fitness sandbox's
environment is an allowlist; it dies with the process) and that one notice is dropped.

Why not RAY_AUTH_MODE=token, which Ray accepts silently: Ray reads its config when it is
imported, and the driver has imported it long before it knows it will start a local Ray;
Ray's own default path re-reads it. A user's RAY_AUTH_MODE, RAY_AUTH_TOKEN or
RAY_AUTH_TOKEN_PATH is left as it is; a cluster (`--address`) uses whatever its nodes were
set up with (see README).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets

import ray

_RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_DEFAULT_ON_NOTICE = "Token authentication is enabled for this Ray cluster"


class _DropDefaultOnNotice(logging.Filter):
    """Drops Ray's notice that it turned token authentication on (here it is on by design);
    every other message of Ray's authentication code still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_DEFAULT_ON_NOTICE)


_FILTER = _DropDefaultOnNotice()


@contextlib.contextmanager
def session(address: str | None):
    """Connects to Ray for the campaign: the caller's, a cluster at `address`, or a local one
    on loopback (shut down afterwards)."""
    if ray.is_initialized():
        yield
        return
    if address is None:
        _configure_local()
        ray.init(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    else:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _configure_local() -> None:
    """Sets up what a local Ray starts from; kept for the process, so a second local Ray in
    it (a sweep's next cell) finds the token Ray has cached."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if "RAY_AUTH_TOKEN" not in os.environ and "RAY_AUTH_TOKEN_PATH" not in os.environ:
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    logging.getLogger(_RAY_AUTH_LOGGER).addFilter(_FILTER)
