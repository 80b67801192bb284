"""The stage plan of an external suite's candidates: the suite's own harness runs them.

`Cascade.evaluate` walks them as it walks built-in ones (`walk.Walk`: the same static
checks, retries, limits and harness version); this plan's stages are the harness run in a
leased sandboxed worker (op "harness", `fitness.sandbox.harness_run`), retired afterwards
(test code may alter its process), then the comparison here of the outputs it hands back as
raw tensor files, with `checking`'s per-element rule. The reference runs the same way once
per task (`Cascade.references`); every seed the harness sets is salted with the cascade's
`harness_seed`, so no published expected output covers the inputs.

A candidate whose outputs pass is timed on the judge's clock, on its suite's performance
inputs as a checker recorded them (`performance_inputs`). Where there is no way to time it
(`Task.untimed_reason`), a correct candidate ends at stage "correct", untimed, the reason
as `error_trace`.
"""

from __future__ import annotations

import ast
import os
import time

from evo.records import Task, parse_source
from fitness.processes import protocol
from fitness.judge import harness_outputs, performance_inputs
from fitness.judge import policy
from fitness.judge.static_checks import missing_entry_point
from fitness.judge.walk import Failed, Walk, crowded_out, worth_retrying
from fitness.processes.pool import WorkerFault

_SEPARATOR = "#" * 146
_FILES_DIR = "harness"
"""Folder of the worker's private directory the harness files and outputs are written to."""


class HarnessError(RuntimeError):
    """The task's own reference failed its harness: the task, not the candidate, is broken."""


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


def _error_kind(error: dict, phase: str) -> str:
    """Returns the failure kind of an exception the harness run reported."""
    text = f"{error.get('type')} {error.get('message', '')}"
    if "illegal memory access" in text.lower():
        return "illegal_memory_access"
    if error.get("type") == "OutOfMemoryError" or "out of memory" in text.lower():
        return "out_of_memory"  # the device is shared: maybe a neighbour's memory
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


def reference(judge, task: Task) -> harness_outputs.Outputs:
    """Returns the reference's outputs, run through its own harness once per task
    (`Cascade.references`); raises HarnessError if the reference fails (the reference passing
    its own harness is exactly this succeeding). A death that may be a neighbour's is raised
    as the WorkerFault, and not remembered."""
    return judge.references.get((task.suite, task.name, "outputs"),
                                lambda: HarnessWalk(judge, task, None).run_reference())


class HarnessWalk(Walk):
    """An external candidate's walk: its harness run, the comparison of what it handed back,
    then its timing on the performance inputs (`performance_inputs`); `candidate` None: the
    task's reference (`run_reference`)."""

    def static_checks(self) -> None:
        """`Walk.static_checks`, then the entry point the harness will look for."""
        super().static_checks()
        source, entry_point = self.candidate.source, self.task.entry_point
        if not defines(source, entry_point):
            raise Failed("import", "missing_entry_point", missing_entry_point(source, entry_point))

    def run(self) -> None:
        self.stage = "import"
        expected = self._reference()
        source = policy.runnable_source(self.candidate.source, self.task)  # what the gate judged
        self.stage = "run"
        _, actual = self._run(source, "ModelNew", self.c.limits.harness_run_s)
        self.stage = "correct"  # entered; `correct` says whether it passed
        self.fields["call_ok"] = True
        errors = harness_outputs.compare(expected, actual, self.task.tolerance)
        self.fields.update(errors.fields())
        if errors.wrong:
            raise errors.first_mismatch()
        self.fields["correct"] = True
        if self.task.untimed_reason or self.task.timing_calls is None:
            self.fields["error_trace"] = (self.task.untimed_reason or "not timed: the suite gives no way to "
                                          "call the kernel on performance inputs")[-6000:]
            return
        performance_inputs.time_candidate(self)

    def run_reference(self) -> harness_outputs.Outputs:
        """`reference`'s computation: the task's reference module through its harness."""
        try:
            _, outputs = self._run(self.task.baseline_source, "Model", self.c.limits.reference_s,
                                   require_launch=False, reference=True)
            return outputs
        except (Failed, WorkerFault) as failure:
            if isinstance(failure, WorkerFault) and worth_retrying(failure.kind, 0):
                raise
            if isinstance(failure, Failed) and crowded_out(self.c, failure.kind):
                raise  # not remembered: the asking walk goes again alone
            stage = failure.stage if isinstance(failure, Failed) else "run"
            raise HarnessError(f"the reference of {self.task.name!r} failed its own harness on "
                               f"{self.c.device.backend} ({failure.kind} at stage {stage}):"
                               f"\n{failure.detail[-4000:]}") from None

    def _reference(self) -> harness_outputs.Outputs:
        """`reference`, its failure this walk's: a broken reference is a harness error, and
        a death beside its run a retried one (`walk.worth_retrying`)."""
        try:
            return reference(self.c, self.task)
        except HarnessError as error:
            raise Failed(self.stage, "harness_error", str(error)) from None
        except WorkerFault as fault:
            raise WorkerFault("harness_error", f"the reference's harness run died: "
                              f"{fault.detail}", fault.output_tail) from None

    def _harness_request(self, source: str, entry: str, reference: bool) -> dict:
        """Returns the worker request that writes the module and test files and runs them;
        `reference`: the task's reference, run for its outputs with every autotuner held to
        one config (`LaunchCounter.one_config`): a candidate's are compared with them within
        the task's tolerance, which any config's rounding falls inside."""
        task = self.task
        module = "kernel" if task.suite != "rocm" else f"test_{task.name.replace('.', '_')}"
        if task.suite == "rocm":
            files = {f"{module}.py": f"{source.rstrip()}\n\n\n{_SEPARATOR}\n\n{task.harness}"}
        elif task.suite == "kernelbench":
            files = {"problem.py": task.harness, f"{module}.py": source}
        else:
            files = {f"{module}.py": source, "harness_tests.py": task.harness}
        return {"op": "harness", "dir": _FILES_DIR, "files": files, "suite": task.suite,
                "module": module, "entry": entry if task.suite == "kernelbench" else task.entry_point,
                "seed": self.c.harness_seed, "trials": len(task.cases_for(self.c.device.backend)),
                "one_config": reference}

    def _run(self, source: str, entry: str, limit_s: float, require_launch: bool = True,
             reference: bool = False) -> tuple[dict, harness_outputs.Outputs]:
        """Runs the harness on `source` in a leased sandboxed worker, the device shared,
        then retires it; returns (report, outputs), or raises Failed. Its wall time is
        `check_s`."""
        request = self._harness_request(source, entry, reference)
        asked = time.monotonic()
        with self.c.candidates.lease() as worker:
            self.c.meter.request("candidate.lease", time.monotonic() - asked,  # the wait for one
                                 self.task.name)
            start = time.monotonic()
            try:
                with self.c.device_lock.shared(reference=reference, process=worker, long=True):
                    start = time.monotonic()
                    report = self._request(worker, request, limit_s)
            finally:
                worker.retired = True  # external test code may have altered the process
                self.check_s = time.monotonic() - start
            stage, kind, trace = _classify(report, self.task.suite, require_launch)
            if kind is not None:
                raise Failed(stage, kind, trace)
            try:  # inside the lease: the worker's files go with it
                return report, harness_outputs.read(os.path.join(worker.workdir, _FILES_DIR), report)
            except protocol.ProtocolError as error:
                raise Failed("run", "wrong_type", f"unreadable outputs: {error}") from None
