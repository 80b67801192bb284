"""Fatal causes a user can fix: named in one plain line, the traceback kept for later.

A full disk, a results folder that refuses writes, a Ray that cannot start, no sandbox, no
device or no fitness actor left: each ends the campaign, and none is a bug of ours, so a
40-line traceback hides the one thing to do. `cause` names it from the exception (walking
its causes, and the text of errors that crossed from a Ray actor, which arrive as
RayTaskError); `line` says it, what the last checkpoint kept and how to go on.
`failure` turns an error into a CampaignFailed, its traceback written to DIR/evo-run.log.
"""

from __future__ import annotations

import errno
import traceback as traceback_lib
from pathlib import Path

from evo.checkpoint import CampaignState
from evo.config import ConfigError
from evo.run_log import RunLog

_FULL = (errno.ENOSPC, errno.EDQUOT)
_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
_REMOTE_CAUSES = {  # type name in a Ray error's text -> the cause it names
    "SandboxUnavailable": "the fitness sandbox is unavailable",
    "DeviceUnresponsive": "the fitness device stopped answering (every GPU gone?)",
    "EndpointUnusable": "the LLM endpoint is gone",
}


class Fatal(Exception):
    """A cause the user can fix, already said plainly (the message is the cause)."""


def cause(error: BaseException) -> str | None:
    """Returns the plain cause of `error` (or of an error it came from), None for a bug."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        found = _own_cause(error)
        if found:
            return found
        error = error.__cause__ or error.__context__
    return None


def _own_cause(error: BaseException) -> str | None:
    if isinstance(error, Fatal):
        return str(error)
    if isinstance(error, OSError) and error.errno in _FULL + (errno.EFBIG,):
        where = f" writing {error.filename}" if error.filename else ""
        if error.errno == errno.EFBIG:
            return f"a file grew past the file size limit{where} (see `ulimit -f`)"
        return f"no space left on the device{where}; free some space"
    if isinstance(error, OSError) and error.errno in _NOT_WRITABLE and error.filename:
        return f"cannot write {error.filename}: {error.strerror}"
    for name, said in _REMOTE_CAUSES.items():
        detail = carried(error, name)
        if detail is not None:
            return f"{said}: {detail}"
    return None


def carried(error: BaseException, name: str) -> str | None:
    """Returns the message of the error of type `name` that `error` is, or carries in its text
    (an error raised in a Ray actor arrives as RayTaskError); None if neither."""
    text = str(error)
    if type(error).__name__ != name and f"{name}: " not in text:
        return None
    return next((line.split(f"{name}: ", 1)[1] for line in text.splitlines()
                 if f"{name}: " in line), text)


def kept(state: CampaignState | None) -> str:
    """Says what the last checkpoint holds: the generation each island finished, or nothing."""
    if state is None or not state.islands:
        return "nothing checkpointed yet"
    done = sorted({island.generation_done for island in state.islands.values()})
    if len(done) == 1:
        return f"checkpoint at generation {done[0]} of every island"
    return (f"checkpoint at generations {done[0]}-{done[-1]} (each island at its own: "
            + ", ".join(f"{task} i{island}: {saved.generation_done}"
                        for (task, island), saved in sorted(state.islands.items())) + ")")


def line(what: str, state: CampaignState | None, resume_command: str, log: str | None) -> str:
    """Returns the one line that ends a stopped campaign."""
    where = f"; traceback in {log}" if log else ""
    return f"{what.rstrip('.')}; kept: {kept(state)}; continue with: {resume_command}{where}"


class CampaignFailed(Exception):
    """A campaign ended by a fatal cause the user can fix (raised by `run_campaign`).

    Attributes:
      cause: the plain cause (`cause`, or a ConfigError's message).
      log: the file holding the traceback.
      traceback: the traceback itself, for `evo run --debug`.
      exit_status: 2 for a config error found once the campaign had started (a sandbox or
        device setting), EXIT_STATUS for the other causes.
    """

    def __init__(self, cause: str, log: Path, traceback: str, exit_status: int):
        super().__init__(cause)
        self.cause, self.log, self.traceback, self.exit_status = cause, log, traceback, exit_status


EXIT_STATUS = 4
"""`evo run`'s exit status for a fatal cause the user can fix (disk full, no Ray, no
sandbox, no fitness actor left)."""


def failure(error: Exception, log: RunLog) -> CampaignFailed | None:
    """Returns the CampaignFailed that `error` amounts to, its traceback written to `log`;
    None if it is a bug (its traceback is logged too, and shows as usual)."""
    text = "".join(traceback_lib.format_exception(error))
    where = log.write(text)
    if isinstance(error, ConfigError):
        return CampaignFailed(f"error: {error}", where, text, 2)
    said = cause(error)
    return None if said is None else CampaignFailed(said, where, text, EXIT_STATUS)
