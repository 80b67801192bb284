"""The walk every candidate takes, whatever its stage plan (built-in: `cascade.BuiltinWalk`; an
external suite's harness: `harness.HarnessWalk`): the checks no process runs, then the plan's
stages, tried once more when what ended them may be a neighbour's fault. `Walk` holds what
every plan shares: the stage it is at, the Evaluation it accumulates, and how a request to a
process is sent and a failed reply ends the walk."""

from __future__ import annotations

import time

from evo.records import Candidate, Evaluation, Task
from fitness import harness_version
from fitness.judge.activity import Activity
from fitness.judge.static_checks import static_failure
from fitness.processes.pool import WorkerFault

RETRIED_DEATHS = frozenset({"worker_crash", "harness_error"})
"""A worker or checker death of these kinds may be a neighbour's fault or a pool restart."""
RETRIED_FAILURES = frozenset({"out_of_memory"})
"""Failures a process reported that may be a neighbour's fault too: a GPU's memory is shared
by every worker and checker of the pool, and the candidates walked beside this one (inputs
of a GiB and more a case) can leave it none. The second try goes alone (`WalkGate`)."""


def crowded_out(judge, kind: str) -> bool:
    """Whether a failure of `kind` may be the neighbours' (out of device memory) and the
    walk that met it ran beside others: raised, it ends that walk, which goes again with the
    device to itself (`walk`); met alone, it is the task's or the candidate's. Out of memory
    beside 7 other walks left 8 TritonBench-revised references untimed and 2 remembered as
    broken (RESULTS.md §35)."""
    return kind in RETRIED_FAILURES and not judge.walks_gate.held_alone


def worth_retrying(kind: str, attempt: int, died: bool = True) -> bool:
    """Whether a walk that ended in `kind` on its `attempt`-th try (from 0) is tried again;
    `died`: a process died (a WorkerFault) rather than reporting the failure."""
    return attempt == 0 and kind in (RETRIED_DEATHS if died else RETRIED_FAILURES)


def walk(plan: type, judge, task: Task, candidate: Candidate, activity: Activity) -> Evaluation:
    """Returns the Evaluation of `candidate` walked by `plan` (a `Walk` subclass); never
    raises for anything the candidate does."""
    walked = plan(judge, task, candidate, activity)
    try:
        walked.static_checks()
    except Failed as failed:
        walked.fail(failed.stage, failed.kind, failed.detail)
        return walked.evaluation()
    crowded = False  # the last try ran out of device memory beside other walks
    for attempt in range(2):
        if attempt:
            walked = plan(judge, task, candidate, activity)
        try:
            with judge.walks_gate.alone() if crowded else judge.walks_gate.side_by_side():
                walked.run()
        except Failed as failed:
            walked.fail(failed.stage, failed.kind, failed.detail)
            if worth_retrying(failed.kind, attempt, died=False):
                judge.meter.retry()
                crowded = failed.kind in RETRIED_FAILURES
                continue
        except WorkerFault as fault:
            walked.fail(walked.stage, fault.kind, described(fault))
            if worth_retrying(fault.kind, attempt):
                judge.meter.retry()
                continue
        break
    return walked.evaluation()


class Failed(Exception):
    """Ends the walk: the candidate failed `kind` at `stage`; `errors`: the checker's
    verdict on the call's outputs when a comparison failed (max_abs_err, rel_err)."""

    def __init__(self, stage: str, kind: str, detail: str, errors: dict | None = None):
        super().__init__(detail)
        self.stage, self.kind, self.detail, self.errors = stage, kind, detail, errors or {}


def described(fault: WorkerFault, detail: str | None = None) -> str:
    """Returns `detail` (default: the fault's own) with the tail of the worker's output under it."""
    tail = f"\n--- worker output (tail) ---\n{fault.output_tail}" if fault.output_tail else ""
    return (fault.detail if detail is None else detail) + tail


class Walk:
    """One candidate's walk (`candidate` None: a walk that runs only the task's reference);
    accumulates the Evaluation's fields. `judge`: the Cascade, whose pools, lock, limits and
    memo the walk uses."""

    def __init__(self, judge, task: Task, candidate: Candidate | None,
                 activity: Activity | None = None):
        self.c = judge
        self.task = task
        self.candidate = candidate
        self.activity = activity or Activity(
            task.name, candidate.id if candidate is not None else "reference")
        self.stage = "syntax"
        self.fields: dict = {"call_ok": False, "correct": False}
        self.compile_s = self.check_s = self.bench_s = 0.0
        self.armed_in_time = True  # every timed batch's arm came within `clock.ARM_S` so far

    @property
    def stage(self) -> str:
        return self.activity.stage

    @stage.setter
    def stage(self, stage: str) -> None:
        self.activity.stage = stage

    def fail(self, stage: str, kind: str, detail: str) -> None:
        self.stage = stage
        self.fields.update(failure_kind=kind, error_trace=detail[-6000:], correct=False)

    def evaluation(self) -> Evaluation:
        device = self.c.device
        return Evaluation(candidate_id=self.candidate.id, stage_reached=self.stage,
                          device=device.name, backend=device.backend,
                          harness_version=harness_version(self.task.suite),
                          timing_meaningful=device.timing_meaningful and self.stage == "timed",
                          compile_s=self.compile_s, check_s=self.check_s, bench_s=self.bench_s,
                          **self.fields)

    def static_checks(self) -> None:
        """`static_failure`'s checks; a plan adds what it needs before any process runs."""
        failure = static_failure(self.task, self.candidate.source, self.c.device,
                                 self.c.static_gate)
        if failure is not None:
            raise Failed(*failure)

    def _request(self, process, request: dict, limit_s: float) -> dict:
        """Sends `request` to a worker or checker; returns its reply, or raises Failed with
        the failure it reports (a checker's is the task's or the harness's fault)."""
        name = f"{process.role}.{request['op']}"
        mode = request.get("mode")  # a harness run's (outputs, prepare, time), the reference's apart
        if isinstance(mode, str):
            name += f".{'reference-' if self.candidate is None else ''}{mode}"
        started = time.monotonic()
        self.activity.waiting_on(name, limit_s)
        try:
            reply = process.request({"task": self.task, **request} if not process.untrusted
                                    else request, limit_s)
        finally:
            self.activity.waiting_on(None)
            self.c.meter.request(name, time.monotonic() - started, self.task.name)
        if not reply.get("ok"):
            kind = reply.get("kind", "harness_error")
            if not process.untrusted and kind != "out_of_memory":
                kind = "harness_error"
            stage = "compile" if kind in ("compile_error", "unsupported_on_backend") else self.stage
            raise Failed(stage, kind, str(reply.get("trace", "")))
        self.c.meter.spent(name, reply)
        return reply
