"""An external candidate timed on the judge's clock, on its suite's performance inputs.

A task whose loader gives a recorder of its suite's timing code (`Task.timing_calls`:
TritonBench-revised's performance file, ROCm's `test_performance`, KernelBench's
`get_inputs`; `benchmarks.external`) gets a built-in-shaped twin, once per task: a checker
records what the timing code calls and with what, then the twin's inputs are made by the
judge from seeds it draws and its reference is that call on the reference. A candidate that
passed its suite's own correctness test is walked on the twin by the built-in plan: loaded
in a fresh worker, checked on the performance inputs, timed by the judge's clock against the
reference timed the same way. Nothing the worker reports enters the verdict.

The suite's test decided `correct`; here a candidate that is wrong (or fails) on the
performance inputs stays correct and is left untimed, with the reason, so exec accuracy stays
the suite's. A task whose calls cannot be recorded is untimed with that reason. What fails
while timed (a wrong timed run, a cheat, a timeout) fails the candidate at stage "timed".
"""

from __future__ import annotations

import dataclasses

from benchmarks.external import common
from evo.records import Case, Task
from fitness.judge.walk import Failed, crowded_out, worth_retrying
from fitness.processes.pool import WorkerFault

INTERPRETER_PERF_INPUTS = 1
"""Performance inputs used on the interpreter (the first, the smallest in GEAK-eval's files):
its timings mean nothing there, and GPU-sized inputs would take it hours."""

RECORD_TRIES = 3
"""Recordings of a task's performance inputs: the first of all of them, then, each time the
reference's own run fails on an input past the first (`recorded.InputFault`), of the inputs
before it. GEAK-eval's timing loop times those and fails the rest when a device fault
poisons its process (an illegal memory access: 7 of the 13 references whose recording failed,
RESULTS.md §33); after an error that is not one it goes on to the later inputs, which are
left out here too: fewer inputs than GEAK-eval's, never others."""
UNDEFINED = "the reference's outputs depend on more than its inputs"
"""Why an input is left out of the timing: fenced, the reference gave other outputs on the same
values (`fitness.judge.fenced`)."""
TASK_FAULTS = ("harness_error",)
"""Failure kinds that are the task's (its reference or its baseline), not the candidate's."""


def performance_task(walk, task: Task) -> tuple[Task | None, str]:
    """Returns (the twin task, "") or (None, why it cannot be timed); the calls are recorded
    in a checker once per task (`Cascade.references`)."""
    # keyed by the calls too: two suites' tasks of one name are recorded apart
    return walk.c.references.get((task.suite, task.name, "performance task", task.timing_calls),
                                 lambda: _recorded_task(walk, task))


def _recorded_task(walk, task: Task) -> tuple[Task | None, str]:
    backend = walk.c.device.backend
    count = INTERPRETER_PERF_INPUTS if backend == "interpreter" else None
    for _ in range(RECORD_TRIES):
        try:
            with walk.c.checkers.lease() as checker, walk.c.device_lock.shared(long=True,
                                                                               process=checker):
                reply = walk._request(checker, {"op": "record", "calls": task.timing_calls,
                                                "count": count}, walk.c.limits.reference_s)
        except Failed as failed:  # the suite's own timing code failed in the checker
            if crowded_out(walk.c, failed.kind):
                raise
            return None, f"not timed: the timing code failed when recorded: {failed.detail[-3000:]}"
        if "faulted_at" not in reply:
            break
        count = reply["faulted_at"]  # the inputs before it, recorded again
    else:
        return None, f"not timed: the timing code failed when recorded: {reply['fault']}"
    if "unrecordable" in reply:
        return None, f"not timed: the timing code's calls cannot be recorded: {reply['unrecordable']}"
    calls = common.with_recorded(task.timing_calls, reply["calls"])
    undefined = {int(at): why for at, why in (reply.get("undefined") or {}).items()}  # JSON's keys
    cases = tuple(Case(f"input {at}", {"input": at}) for at in range(calls.inputs) if at not in undefined)
    if not cases:
        first = min(undefined)
        return None, (f"not timed: {UNDEFINED} on every performance input (it leaves outputs "
                      f"unwritten or reads past its inputs); input {first}: {undefined[first]}")
    twin = dataclasses.replace(task, name=f"{task.name}[performance inputs]", harness=None,
                               reference=calls, make_inputs=calls.make_inputs,
                               entry_point=getattr(calls, "entry_point", calls.entry),
                               cases=cases, interpreter_cases=cases,
                               written=calls.written, entry_call=getattr(calls, "entry_call", None),
                               unwritten_free=bool(reply.get("unwritten")),
                               timing_calls=None)
    return twin, ""


def time_candidate(walk) -> None:
    """Times `walk`'s candidate (an external walk that found it correct) on its task's
    performance inputs by the built-in plan; leaves `walk` at stage "timed" with the timing
    fields, or at "correct", untimed, the reason in `error_trace`. Raises Failed for a
    failure while timed, WorkerFault for a death while timed or one worth a retry (a
    neighbour's fault, maybe: `walk.worth_retrying`)."""
    from fitness.judge.cascade import BuiltinWalk  # cascade imports the external plan

    twin, reason = performance_task(walk, walk.task)
    if twin is None:
        walk.fields["error_trace"] = reason[-6000:]
        return
    timed = BuiltinWalk(walk.c, twin, walk.candidate, walk.activity)
    try:
        timed.run()
    except Failed as failed:
        timed_fault = failed.stage == "timed" and failed.kind not in TASK_FAULTS
        if timed_fault or crowded_out(walk.c, failed.kind):
            raise Failed(failed.stage, failed.kind, f"on the performance inputs: {failed.detail}") from None
        _untimed(walk, failed.kind, failed.stage, failed.detail)
        return
    except WorkerFault as fault:
        if timed.stage == "timed" or worth_retrying(fault.kind, 0):
            raise
        _untimed(walk, fault.kind, timed.stage, fault.detail)
        return
    finally:
        walk.compile_s += timed.compile_s
        walk.check_s += timed.check_s
        walk.bench_s += timed.bench_s
    walk.stage = "timed"
    walk.fields.update({key: value for key, value in timed.fields.items()
                        if key.startswith(("latency_", "ref_latency", "speedup", "worst_speedup", "roofline"))})


def _untimed(walk, kind: str, stage: str, detail: str) -> None:
    """Leaves `walk` correct and untimed: its candidate failed `kind` at `stage` on the
    performance inputs (or the task's baseline did)."""
    walk.stage = "correct"
    walk.fields["error_trace"] = f"not timed: {kind} at {stage} on the performance inputs: {detail}"[-6000:]
