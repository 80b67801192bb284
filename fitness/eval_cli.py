"""`evo eval TASK FILE...`: score candidate files against a task, outside any campaign.

Exit status is 0 whatever the verdicts (a failing candidate is a result, not an error);
only usage errors (unknown task, missing file, unusable device) raise UsageError, which
the CLI turns into a message and a non-zero status.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import math
import os
import pathlib
import re
from typing import Sequence

from evo.records import Evaluation, make_candidate
from fitness.device import UNMEASURED

_MAX_WORKERS = 4


class UsageError(ValueError):
    """The command line names something that does not exist; the message says what."""


def _load_task(name: str, suite: str | None, path: str | None):
    from benchmarks import registry

    try:
        return registry.load(suite, path).get(name)
    except registry.UnknownTaskError as error:
        raise UsageError(str(error)) from None
    except (ValueError, FileNotFoundError, ImportError) as error:
        raise UsageError(f"cannot load suite {suite!r}: {error}") from None


def _read_sources(files: Sequence[str]) -> list[str]:
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise UsageError(f"no such candidate file: {', '.join(missing)}")
    return [pathlib.Path(name).read_text(encoding="utf-8", errors="replace") for name in files]


_STAGE_OF_KIND = {"unsupported_on_backend": "platform", "policy_violation": "gate"}


def stage_name(evaluation: Evaluation) -> str:
    """Returns the cascade stage a verdict ended at, by docs/design.md's names: `stage_reached`,
    except the checks recorded as stage "syntax" that come after it: the task's backends
    ("platform") and the static gate ("gate")."""
    return _STAGE_OF_KIND.get(evaluation.failure_kind, evaluation.stage_reached)


def for_file(path: str, evaluation: Evaluation) -> Evaluation:
    """Returns the evaluation with its error text naming the candidate file as the user gave
    it, where the judge and the worker could only call it "candidate.py"."""
    from fitness.judge.static_checks import CANDIDATE_FILE

    trace = evaluation.error_trace.replace(f'"{CANDIDATE_FILE}"', json.dumps(path))
    return dataclasses.replace(evaluation, error_trace=trace)


def _location(path: str, trace: str) -> str:
    """Returns " (PATH, line N)" for the last line of the candidate file a trace names, or ""."""
    lines = re.findall(rf'File {re.escape(json.dumps(path))}, line (\d+)', trace)
    return f" ({path}, line {lines[-1]})" if lines else ""


def _json_ready(evaluation: Evaluation, path: str) -> dict:
    """Returns the evaluation as plain JSON values (a case not checked: null, not NaN), with
    the stage by its cascade name and the candidate file."""
    fields = {name: [None if isinstance(v, float) and math.isnan(v) else v for v in value]
              if isinstance(value, tuple) else value
              for name, value in dataclasses.asdict(evaluation).items()}
    return {**fields, "stage": stage_name(evaluation), "candidate": path}


def _summary_line(path: str, evaluation: Evaluation) -> str:
    """Returns the verdict in one line, marked where it was scored without the sandbox."""
    mark = "" if evaluation.sandboxed else " [UNSANDBOXED: scored without the OS sandbox]"
    if evaluation.correct and evaluation.speedup is None:  # a harness task with no timing harness
        return (f"{path}: correct over {len(evaluation.case_names)} cases, "
                f"{evaluation.error_trace or 'not timed'}{mark}")
    if evaluation.correct:
        note = "" if evaluation.timing_meaningful else (
            f" ({UNMEASURED.get(evaluation.backend, 'timing not meaningful')})")
        return (f"{path}: correct, speedup {evaluation.speedup:.3f}x (worst "
                f"{evaluation.worst_speedup:.3f}x) over {len(evaluation.case_names)} cases"
                f"{note}{mark}")
    first_line = next((line for line in reversed(evaluation.error_trace.strip().splitlines())
                       if line.strip()), "")
    return (f"{path}: FAILED {evaluation.failure_kind} at stage {stage_name(evaluation)}: "
            f"{first_line[:300]}{_location(path, evaluation.error_trace)}{mark}")


def stage_limits(timeout_s: float | None):
    """Returns the stage limits of `evo eval --timeout timeout_s`: that one limit for every
    stage, or, by default (None), a campaign's own (`[fitness.timeouts]`'s defaults), so a
    file is scored exactly as a campaign would score it."""
    from fitness.settings import Limits

    return Limits() if timeout_s is None else Limits.uniform(timeout_s)


def evaluate_files(task: str, files: Sequence[str], as_json: bool = False, device: str = "auto",
                   timeout_s: float | None = None, suite: str | None = None,
                   path: str | None = None, sandbox: str = "bwrap") -> list[Evaluation]:
    """Evaluates each file against `task`; prints one line (or JSON object) per file, in order;
    returns the Evaluations. `timeout_s`: see `stage_limits`."""
    from pydantic import ValidationError

    from fitness.device import DeviceError
    from fitness.evaluator import Evaluator
    from fitness.processes.jail import SandboxUnavailable
    from fitness.settings import SANDBOX_MODES, Settings

    if not files:
        raise UsageError("give at least one candidate file")
    if timeout_s is not None and timeout_s <= 0:
        raise UsageError(f"--timeout must be positive, got {timeout_s}")
    if sandbox not in SANDBOX_MODES:
        raise UsageError(f"--sandbox must be one of {', '.join(SANDBOX_MODES)}, got {sandbox!r}")
    sources = _read_sources(files)
    the_task = _load_task(task, suite, path)
    candidates = [make_candidate(the_task.name, source) for source in sources]
    workers = max(1, min(len(files), _MAX_WORKERS))
    try:
        evaluator = Evaluator(Settings(device=device, workers=workers, sandbox=sandbox,
                                       timeouts=stage_limits(timeout_s)))
    except (DeviceError, SandboxUnavailable) as error:
        raise UsageError(str(error)) from None
    except ValidationError as error:
        problem = error.errors()[0]
        raise UsageError(f"--{problem['loc'][0]}: {problem['msg']}, got {problem['input']!r}") from None
    with evaluator, concurrent.futures.ThreadPoolExecutor(workers) as pool:
        evaluations = list(pool.map(lambda c: evaluator.evaluate(the_task, c), candidates))
    evaluations = [for_file(file_path, evaluation) for file_path, evaluation in zip(files, evaluations)]
    for file_path, evaluation in zip(files, evaluations):
        line = (json.dumps(_json_ready(evaluation, file_path)) if as_json
                else _summary_line(file_path, evaluation))
        print(line, flush=True)
    return evaluations
