"""Scores a candidate of an external-suite task by running the suite's own harness.

The same seam as built-in candidates: the same static checks (`static_checks`), then the
harness runs in a leased sandboxed worker (op "harness", `fitness.sandbox.harness_run`),
which is retired afterwards (test code may alter its process). Its outputs come back as raw
tensor files and are compared here with `checking`'s per-element rule. The reference runs
the same way once per task and its outputs stay in this process; every seed the harness
sets is salted with `input_seed`, so no published expected output covers the inputs.

A candidate whose outputs pass gets a timing pass, the device held alone, where the suite
gives a way to call the kernel (ROCm's `test_performance`, KernelBench's `Model`/`ModelNew`);
the reference is timed the same way once per task. TritonBench-revised has no timing
harness: its correct candidates end at stage "correct", untimed, the reason as `error_trace`.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import random
import threading
import time

from evo.records import Candidate, Evaluation, Task, parse_source
from fitness import EXTERNAL_HARNESS_VERSION
from fitness.processes import protocol
from fitness.judge import harness_outputs, timing_report
from fitness.judge import policy
from fitness.judge.retries import worth_retrying
from fitness.judge.static_checks import missing_entry_point, static_failure
from fitness.settings import Limits
from fitness.processes.pool import WorkerFault

_SEPARATOR = "#" * 146
_FILES_DIR = "harness"
"""Folder of the worker's private directory the harness files and outputs are written to."""


class HarnessError(RuntimeError):
    """The task's own reference failed its harness: the task, not the candidate, is broken."""


@dataclasses.dataclass(frozen=True)
class _Run:
    """One harness run's outcome: stage reached, failure (kind None: none), report, outputs."""

    stage: str
    kind: str | None
    trace: str
    wall_s: float
    report: dict = dataclasses.field(default_factory=dict)
    outputs: harness_outputs.Outputs | None = None


def defines(source: str, name: str) -> bool:
    """Returns whether a module's top level binds `name` (def, class, assignment, import)."""
    for node in parse_source(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names):
                return True
    return False


def untimed_reason(task: Task) -> str:
    """Returns why a harness task cannot be timed, or "" when its suite gives a way to call
    the kernel (ROCm: a `test_performance` test; KernelBench: always)."""
    if task.suite == "kernelbench":
        return ""
    if task.suite == "rocm":
        if defines(task.harness, "test_performance"):
            return ""
        return f"not timed: the ROCm benchmark file of {task.name!r} has no test_performance"
    return f"not timed: suite {task.suite!r} has no timing harness (correctness only)"


def _error_kind(error: dict, phase: str) -> str:
    """Returns the failure kind of an exception the harness run reported."""
    text = f"{error.get('type')} {error.get('message', '')}"
    if "illegal memory access" in text.lower():
        return "illegal_memory_access"
    if str(error.get("module", "")).startswith("triton") and "Compil" in str(error.get("type", "")):
        return "compile_error"
    if phase == "import" or error.get("type") in ("ImportError", "ModuleNotFoundError"):
        return "import_error"
    if error.get("type") == "AssertionError":
        return "mismatch"  # the harness's own in-process check failed
    return "runtime_error"


def _classify(report: dict, suite: str, require_launch: bool) -> tuple[str, str | None, str]:
    """Returns (stage reached, failure kind or None, error text) of a harness run's report.

    The report comes from the candidate's process: a malformed one is a protocol violation.
    """
    try:
        if not report.get("ok"):
            return "run", str(report.get("kind", "worker_crash")), str(report.get("trace", ""))
        phase = report["phase"]
        stage = "import" if phase == "import" else "run"
        if report.get("collect_error"):
            return "import", "import_error", str(report["collect_error"])
        failed = [test for test in report["tests"] if test["outcome"] == "failed"]
        if report["error"] or failed:
            error = report["error"] or failed[0]["error"]
            where = f"test {failed[0]['name']}: " if failed and not report["error"] else ""
            return stage, _error_kind(error, phase), where + str(error.get("trace", error.get("message", "")))
        if phase != "done":
            return stage, "worker_crash", f"the harness stopped at phase {phase!r} without an error"
        if not report["tests"] and suite == "rocm":
            return stage, "harness_error", "pytest ran no correctness test"
        if require_launch and not report.get("launches"):
            return "run", "no_triton_launch", "the harness ran without launching any Triton kernel"
        return "run", None, ""
    except (AttributeError, KeyError, TypeError, IndexError) as error:
        return "run", "worker_crash", f"protocol violation: malformed harness report ({error!r})"


def _timings(report: dict, wall_s: float) -> dict[str, dict]:
    """Returns a timing pass's checked stats per case; raises ForgedTiming (a ValueError)."""
    timings = report.get("timings")
    if not isinstance(timings, dict) or not timings:
        raise timing_report.ForgedTiming("the timing pass timed no case")
    return timing_report.checked(timings, wall_s)


class HarnessRunner:
    """Scores candidates of harness tasks on the Evaluator's candidate pool; thread-safe.

    Args:
      device: the DeviceInfo the pool's workers run on.
      workers: the Evaluator's candidate WorkerPool (sandboxed workers).
      gate: the Evaluator's DeviceLock: runs share the device, timing passes hold it alone.
      limits: the stage limits (`Limits.harness_run_s` a run, `bench_s` a timing pass,
        `reference_s` the reference's run).
      input_seed: salts the harness's seeds (drawn at random when None); with
        `salt_seeds=False` the harness keeps its own seeds, as the suite publishes them.
      static_gate: False only to test what the later layers catch on their own.
      timing: the TimingConfig of timing passes (None: the backend's default).
    """

    def __init__(self, device, workers, gate, limits: Limits = Limits(), input_seed: int | None = None,
                 salt_seeds: bool = True, require_triton_launch: bool = True, static_gate: bool = True,
                 timing=None):
        self.device, self.workers, self.gate, self.limits = device, workers, gate, limits
        if not salt_seeds:
            self.input_seed = None
        else:
            self.input_seed = random.SystemRandom().randrange(1, 2**30) if input_seed is None else input_seed
        self.require_triton_launch = require_triton_launch
        self.static_gate = static_gate
        self.timing = dataclasses.asdict(timing) if timing else None
        self._lock = threading.Lock()
        self._task_locks: dict[tuple, threading.Lock] = {}
        self._references: dict[tuple, object] = {}  # outputs or timings, or the HarnessError

    def evaluate(self, task: Task, candidate: Candidate) -> Evaluation:
        """Returns the verdict of the task's own harness on the candidate."""
        verdict = dict(candidate_id=candidate.id, device=self.device.name, backend=self.device.backend,
                       harness_version=EXTERNAL_HARNESS_VERSION, call_ok=False, correct=False)
        stage, kind, trace = self._static_failure(task, candidate.source)
        if kind is None:
            try:
                expected = self.reference_outputs(task)
            except HarnessError as error:
                stage, kind, trace = "import", "harness_error", str(error)
        if kind is not None:
            return Evaluation(stage_reached=stage, failure_kind=kind, error_trace=trace, **verdict)
        source = policy.runnable_source(candidate.source, task)  # what the gate judged, never-run code blanked
        run = self._run(task, source, "ModelNew", "outputs", self.limits.harness_run_s,
                        self.require_triton_launch)
        if run.kind is not None:
            return Evaluation(stage_reached=run.stage, failure_kind=run.kind, error_trace=run.trace[-6000:],
                              check_s=run.wall_s, **verdict)
        check = harness_outputs.compare(expected, run.outputs, task.tolerance)
        checked = dict(stage_reached="correct",  # entered; `correct` says whether it passed
                       failure_kind=check["kind"], error_trace=check["detail"],
                       case_names=tuple(name for name, _, _ in check["cases"]),
                       max_abs_err=tuple(err for _, err, _ in check["cases"]),
                       rel_err=tuple(rel for _, _, rel in check["cases"]),
                       check_s=run.wall_s, **{**verdict, "call_ok": True, "correct": check["kind"] is None})
        if check["kind"] is None:
            checked.update(self._time(task, source))
        return Evaluation(**checked)

    def _static_failure(self, task: Task, source: str) -> tuple[str, str | None, str]:
        """The checks no process runs: `static_failure`'s, then the entry point."""
        failure = static_failure(task, source, self.device, self.static_gate)
        if failure is not None:
            return failure
        if not defines(source, task.entry_point):
            return "import", "missing_entry_point", missing_entry_point(source, task.entry_point)
        return "syntax", None, ""

    def _time(self, task: Task, source: str) -> dict:
        """Returns the Evaluation fields of a correct candidate's timing pass: latencies and
        speedup at stage "timed", a failure at stage "timed", or the reason it is untimed."""
        reason = untimed_reason(task)
        if reason:
            return {"error_trace": reason}
        failed = dict(stage_reached="timed", correct=False)
        try:
            reference = self._once(task, "timings", lambda: self._reference_timings(task))
        except HarnessError as error:
            return dict(failed, failure_kind="harness_error", error_trace=str(error)[-6000:])
        run = self._run(task, source, "ModelNew", "time", self.limits.bench_s,
                        self.require_triton_launch)
        if run.kind is None:
            try:
                timings = _timings(run.report, run.wall_s)
            except ValueError as error:
                run = dataclasses.replace(run, kind="cheat_forged_timing", trace=str(error))
        if run.kind is not None:
            return dict(failed, failure_kind=run.kind, bench_s=run.wall_s,
                        error_trace=f"timing pass: {run.trace}"[-6000:])
        if set(timings) != set(reference):
            return dict(failed, failure_kind="harness_error", bench_s=run.wall_s, error_trace=(
                f"timing pass: cases {sorted(timings)} differ from the reference's {sorted(reference)}"))
        names = list(reference)
        return dict(stage_reached="timed", bench_s=run.wall_s, timing_meaningful=self.device.timing_meaningful,
                    **timing_report.speedup_fields([timings[name] for name in names],
                                                  [reference[name] for name in names]))

    def reference_outputs(self, task: Task) -> harness_outputs.Outputs:
        """Returns the reference's outputs; raises HarnessError if the reference fails
        (the reference passing its own harness is exactly this call succeeding)."""
        return self._once(task, "outputs", lambda: self._reference_run(task, "outputs").outputs)

    def _reference_timings(self, task: Task) -> dict[str, dict]:
        run = self._reference_run(task, "time")
        try:
            return _timings(run.report, run.wall_s)
        except ValueError as error:
            raise HarnessError(f"the reference of {task.name!r} failed its timing pass: {error}") from None

    def _reference_run(self, task: Task, mode: str) -> _Run:
        limit_s = self.limits.reference_s if mode == "outputs" else self.limits.bench_s
        run = self._run(task, task.baseline_source, "Model", mode, limit_s, require_launch=False)
        if run.kind is not None:
            raise HarnessError(f"the reference of {task.name!r} failed its own harness on "
                               f"{self.device.backend} ({run.kind} at stage {run.stage}):\n{run.trace[-4000:]}")
        return run

    def _once(self, task: Task, what: str, compute):
        """Returns compute()'s result for (task, what), computed once per runner; a
        HarnessError is kept too, so a broken reference fails once."""
        key = (task.suite, task.name, what)
        with self._lock:
            task_lock = self._task_locks.setdefault(key, threading.Lock())
        with task_lock:
            if key not in self._references:
                try:
                    self._references[key] = compute()
                except HarnessError as error:
                    self._references[key] = error
            outcome = self._references[key]
        if isinstance(outcome, HarnessError):
            raise outcome
        return outcome

    def _request(self, task: Task, source: str, entry: str, mode: str) -> dict:
        """Returns the worker request that writes the module and test files and runs them."""
        module = "kernel" if task.suite != "rocm" else f"test_{task.name.replace('.', '_')}"
        if task.suite == "rocm":
            files = {f"{module}.py": f"{source.rstrip()}\n\n\n{_SEPARATOR}\n\n{task.harness}"}
        elif task.suite == "kernelbench":
            files = {"problem.py": task.harness, f"{module}.py": source}
        else:
            files = {f"{module}.py": source, "harness_tests.py": task.harness}
        return {"op": "harness", "dir": _FILES_DIR, "files": files, "suite": task.suite,
                "module": module, "entry": entry if task.suite == "kernelbench" else task.entry_point,
                "seed": self.input_seed, "trials": len(task.cases_for(self.device.backend)),
                "mode": mode, "timing": self.timing}

    def _run(self, task: Task, source: str, entry: str, mode: str, limit_s: float,
             require_launch: bool) -> _Run:
        """Runs the harness on `source` in a leased sandboxed worker, then retires it; a
        death that may be a neighbour's fault is retried once on a fresh worker, as the
        cascade does. A timing pass holds the device alone; its wall time starts then."""
        request = self._request(task, source, entry, mode)
        access = self.gate.exclusive if mode == "time" else self.gate.shared
        for attempt in range(2):
            with self.workers.lease() as worker:
                start = time.monotonic()
                try:
                    with access():
                        start = time.monotonic()
                        report = worker.request(request, limit_s)
                except WorkerFault as fault:
                    if worth_retrying(fault.kind, attempt):
                        continue
                    tail = f"\n--- worker output (tail) ---\n{fault.output_tail}" if fault.output_tail else ""
                    return _Run("run", fault.kind, fault.detail + tail, time.monotonic() - start)
                finally:
                    worker.retired = True  # external test code may have altered the process
                wall_s = time.monotonic() - start
                stage, kind, trace = _classify(report, task.suite, require_launch)
                if kind is not None or mode != "outputs":
                    return _Run(stage, kind, trace, wall_s, report)
                try:  # inside the lease: the worker's files go with it
                    outputs = harness_outputs.read(os.path.join(worker.workdir, _FILES_DIR), report)
                except protocol.ProtocolError as error:
                    return _Run("run", "wrong_type", f"unreadable outputs: {error}", wall_s, report)
                return _Run(stage, None, "", wall_s, report, outputs)
