"""`evo gate TASK FILE...` / `evo gate --references`: the static gate alone, nothing run.

A user checking LLM output or a prompt change wants the gate's verdict in milliseconds,
without a device, a sandbox or a worker: this reads each file, blanks the code that never
runs (as the evaluator does) and judges it. `--references` gates each task's own reference
module as a candidate of its task, the check that an external suite's policy admits what its
references do. Exit status 1 when any file is refused (2, from the CLI, for usage errors).
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Sequence

from fitness.eval_cli import UsageError, _load_task, _read_sources


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The gate's answer on one file, as `--json` prints it."""

    candidate: str
    task: str
    allowed: bool
    violation: str | None
    rule: str | None
    line: int | None
    ms: float


def judge(label: str, source: str, task) -> Verdict:
    """Returns the gate's verdict on `source` as a candidate of `task`."""
    from fitness.judge import policy

    start = time.perf_counter()
    try:
        violation = policy.check(source, task)
    except (SyntaxError, ValueError) as error:  # the evaluator's syntax stage says the same
        violation = policy.Violation(getattr(error, "lineno", None) or 1, "syntax", str(error))
    ms = (time.perf_counter() - start) * 1000
    return Verdict(label, task.name, violation is None, None if violation is None else str(violation),
                   None if violation is None else violation.rule,
                   None if violation is None else violation.line, round(ms, 3))


def gate_files(task: str | None, files: Sequence[str], as_json: bool = False, suite: str | None = None,
         path: str | None = None, references: bool = False) -> list[Verdict]:
    """Gates each file against `task` (or, with `references`, every task's own reference);
    prints one line (or JSON object) per file, in order."""
    if references:
        if task or files:
            raise UsageError("--references gates the suite's own references: give no TASK or FILE")
        verdicts = [judge(t.source_path or f"{t.name} (reference)", t.baseline_source, t)
                    for t in _load_suite(suite, path)]
    else:
        if not task or not files:
            raise UsageError("give a task and at least one candidate file (or --references)")
        the_task = _load_task(task, suite, path)
        verdicts = [judge(name, source, the_task) for name, source in zip(files, _read_sources(files))]
    for verdict in verdicts:
        print(json.dumps(dataclasses.asdict(verdict)) if as_json else _line(verdict), flush=True)
    return verdicts


def _line(verdict: Verdict) -> str:
    if verdict.allowed:
        return f"{verdict.candidate}: allowed ({verdict.task})"
    return f"{verdict.candidate}: REFUSED ({verdict.task}) {verdict.violation}"


def _load_suite(suite: str | None, path: str | None) -> list:
    from benchmarks import registry

    try:
        return registry.load(suite, path).tasks()
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise UsageError(f"cannot load suite {suite!r}: {error}") from None
