"""The checks no process runs, one path for every walk: the source parses, the task runs on
this device, and the static gate admits the source."""

from __future__ import annotations

from evo.records import Task, parse_source
from fitness.device import DeviceInfo
from fitness.judge import policy


def static_failure(task: Task, source: str, device: DeviceInfo,
                   static_gate: bool = True) -> tuple[str, str, str] | None:
    """Returns (stage, failure kind, detail) of the first check `source` fails, or None."""
    try:
        parse_source(source)
    except (SyntaxError, ValueError) as error:
        return "syntax", "syntax_error", f"{type(error).__name__}: {error}"
    if device.backend not in task.runnable_on:
        return "syntax", "unsupported_on_backend", (f"task {task.name!r} does not run on "
                                                    f"{device.backend}: {task.skip_reason}")
    violation = policy.check(source, task) if static_gate else None
    if violation is not None:
        return "syntax", "policy_violation", str(violation)
    return None
