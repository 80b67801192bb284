"""The checks no process runs, one path for every walk: the source parses, the task runs on
this device, and the static gate admits the source; and the words of their failures."""

from __future__ import annotations

import ast
import difflib
import traceback

from evo.records import Task, parse_source
from fitness.device import DeviceInfo
from fitness.judge import policy

CANDIDATE_FILE = "candidate.py"
"""The name a candidate's module goes by in error texts (the judge sees only its source;
`evo eval` puts the user's path in its place)."""


def static_failure(task: Task, source: str, device: DeviceInfo,
                   static_gate: bool = True) -> tuple[str, str, str] | None:
    """Returns (stage, failure kind, detail) of the first check `source` fails, or None."""
    try:
        parse_source(source)
    except SyntaxError as error:
        return "syntax", "syntax_error", syntax_error_text(error)
    except ValueError as error:  # a null byte
        return "syntax", "syntax_error", f"{type(error).__name__}: {error}"
    if device.backend not in task.runnable_on:
        runs_on = ", ".join(task.runnable_on) or "no backend"
        return "syntax", "unsupported_on_backend", (f"task {task.name!r} runs on {runs_on} only "
                                                    f"({task.skip_reason})")
    violation = policy.check(source, task) if static_gate else None
    if violation is not None:
        return "syntax", "policy_violation", str(violation)
    return None


def syntax_error_text(error: SyntaxError) -> str:
    """Returns a SyntaxError as Python prints it, the file named `CANDIDATE_FILE`: the file
    and line, the line itself with a caret under the column, then the message."""
    error.filename = CANDIDATE_FILE
    return "".join(traceback.format_exception_only(error)).rstrip()


def missing_entry_point(source: str, entry_point: str) -> str:
    """Returns why a module without `entry_point` fails: the functions and classes it
    defines at top level instead, and the closest public name among them (a `_private`
    helper is never what the entry point was meant to be called)."""
    try:
        body = parse_source(source).body
    except (SyntaxError, ValueError):
        body = []
    defined = [node.name for node in body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    found = ", ".join(defined) if defined else "none"
    public = [name for name in defined if not name.startswith("_")]
    close = difflib.get_close_matches(entry_point, public, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (f"the module defines no function {entry_point!r}, the task's entry point; its "
            f"top-level functions and classes: {found}{hint}")
