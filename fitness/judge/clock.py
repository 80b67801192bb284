"""The judge's clock: how a walk times one case of the module loaded in its worker, candidate
or baseline alike (docs/design.md, "The timed batch").

Every batch gets new inputs from the checker and is judged (runs drawn once the worker has
committed to it); a case's batches run in one device hold. On a GPU the checker's monotonic
clock from storing `go` in a page of host words to reading its own `turn` word, written by
its stream behind a wait for the worker's `done` (`TURN`), is the latency; on the
interpreter the CPU time of the worker's whole process tree, read from /proc around the
request with the tree stopped at the end. The worker's replies carry outputs' places and
audit observations, never a number.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
import statistics

from fitness.judge.walk import Failed
from fitness.processes import host_words
from fitness.processes.pool import GRACE_S, WorkerFault, quiet, relay_fd, stopped

GPU_BATCHES = 5
"""Batches per case on a GPU: the median of the last this many is the latency (each on new
inputs; more run after a slow start, `gpu_stop`)."""
SETTLED_BATCHES = 3
"""A GPU case stops after this many batches when they agree within `SETTLED_SPREAD`: their
median is the latency, within that spread of the one `GPU_BATCHES` would give. A batch held
the device about 30 ms in fitness_bench on a data-center GPU (its fresh inputs, snapshot and
judging) for about 5 ms of runs (RESULTS.md §35), so a settled case's last batches were most
of its time alone on the device."""
SETTLED_SPREAD = 0.01
"""How far apart (max - min, over their median) a case's batches may be to be settled."""
MAX_GPU_BATCHES = 10
"""Batches per GPU case at most: past `GPU_BATCHES`, more run while its first ones still
weigh in its median (`gpu_stop`), and the latency is the median of the last `GPU_BATCHES`."""
WARM_DRIFT = 1.1
"""How much slower than its last `SETTLED_BATCHES` the median of a case's last `GPU_BATCHES`
may read before the case is timed on: a candidate's hold goes ahead beside the walks it
stopped, whose kernels already queued still run on the device, and its first batches read
slow while they drain. kldiv_compute's reference against itself, batches of one 229-us run:
8,610, 4,458, 2,145, 241 and 230 us, a median of 2,145 where its baseline's, timed alone,
read 229 (RESULTS.md#warm-start)."""
DEVICE_QUIET_S = 1.0
"""How long a case's hold waits for the device to be quiet before it times anyway: the holders
it stopped launch nothing more, but what they had queued runs on. seeded_dropout's reference
against itself read four cases 4-15x slow in every one of 5 batches (one time slice a batch,
about 2.2 ms) beside 6-8 stopped holders, where its baseline alone read them as the rest
(RESULTS.md#queued-beside)."""
INTERPRETER_BATCHES = 2
"""Batches per case on the interpreter (its latency is not meaningful: few suffice), after a
first one that is judged but not counted: the interpreter's first runs of a module in a
worker pay set-up that a GPU pays in staging."""
INTERPRETER_LOSER_SLACK = 3.0
"""On the interpreter a clear loser must be this many times slower than the give-up latency:
its CPU-time latency scatters by tens of percent, and an honest copy of the baseline must
not be screened out as a loser."""
ARM_S = 2.0
"""How long the judge waits for a worker to arm a batch before it lets go anyway: host code
that synchronizes cannot arm behind `go`, and is then timed with its host work."""
ARM_BLOCKED_S = 0.05
"""How long the judge waits for an eager case's arm once a batch of the walk's worker did not
arm within `ARM_S`: its host code synchronizes before `go` (masked_select's, whose nonzero
waits for the GPU), and no batch of it will. Each batch waited out `ARM_S`: 10 s a case of 5
batches, 204 s for one baseline's 16 cases, in a hold that stopped every other walk
(evidence: RESULTS.md#arm-blocked). A worker that is waited for less loses, never gains: the
clock starts at `go` either way, and what it had not enqueued by then is timed."""
BATCH_S = 0.005
"""Seconds a GPU batch aims to last: long beside the go..done handoff (about 160 us: the
worker's stream woken from its wait on `go`, RESULTS.md#host-clock), short beside a case's
budget."""
MAX_RUNS = 32
"""Runs a batch holds at most: each needs its own inputs and output region, made fresh, and
its own copy in the worker's captured graph. The handoff (about 160 us a batch,
RESULTS.md#host-clock) is part of every run's share, the baseline's too."""
TURN = "go"
"""When the checker queues its stream's turn, where the clock stops and the snapshot is taken
(`TimedBatch.release`): "go", before it stores `go`, behind a wait of its stream for `done`,
the same for every batch however `done` is said; "done", once it reads `done` (the hand-over
past `timed_batch.TURN_ALLOWANCE_US` counted), where an early `done` gained 10-15% on the
GPU (c05_finishes, RESULTS.md §32). Kept for the scripts that compare them."""
WAKE = "spin"
"""How the worker's stream waits for `go` (`fitness.sandbox.timed.TimedCase.arm`): "spin",
behind a one-thread kernel that reads the word from the moment the batch is armed; "front",
blocked in the GPU's front end, woken about 160 us after `go` is stored
(RESULTS.md#host-clock), slower than a candidate that spins on its own: c02_wakes read 1.20x
its twin with `TURN` "go" (RESULTS.md §33). With "spin" and "go" the judge read 0.966x events
at the median over the baselines."""
QUIET = "all"
"""What a timing hold holds off of the pools' own comings and goings
(`fitness.processes.pool.quiet`): "all", killed workers' exits waited for and workers still
starting stopped; "ends", the exits only; "off", neither, and the pools end and start
workers during a hold too (`fitness.evaluator.Evaluator`). Kept for the scripts that
compare them (`--quiet`)."""
WARM = False
"""Whether a GPU case's graph is launched once when captured, outside the clock (the
capture then holds the device shared as device work, not as compiling): a case's first
batch read 250 us or more over its case's fastest in 16-35% of cases on a GPU, later ones
in 0-6% (RESULTS.md §37), as if the graph's first launch paid for uploading it. Off until
measured; kept for the scripts that compare them (`--warm`)."""
_DRAW = random.SystemRandom()


def batch_runs(per_run_us: float | None, meaningful: bool) -> int:
    """Returns the runs of a batch of a callable whose runs take about `per_run_us` (None:
    unknown, 8); two on the interpreter."""
    if not meaningful:
        return 2
    if not per_run_us:
        return 8
    return max(4, min(MAX_RUNS, math.ceil(BATCH_S * 1e6 / per_run_us)))


RETIME_SLACK = 1.25
"""A baseline's case is timed again only where its latency asks for more than this many times
the runs its batches held: batches of 4 ms or more of runs carry the handoff's fixed cost
(about 16 us a batch, RESULTS.md#baseline-batch-runs) at 0.4% of a run, and a case's
latency read within a few percent of the case before's would otherwise be timed twice for
it."""


def baseline_runs(floor_us: float | None, previous_us: float | None, meaningful: bool) -> int:
    """Returns the runs of a baseline case's first timing: what twice its roofline floor asks
    for, else what the latency of the case timed before it asks for (a suite's performance
    inputs grow case by case: sized by 8 runs, 45% of such cases were timed again, in holds
    that stop every other walk and were 98% staging; evidence: RESULTS.md#baseline-probe),
    else `batch_runs`'s 8."""
    return batch_runs(2 * floor_us if floor_us else previous_us, meaningful)


def retimed_runs(runs: int, median_us: float, meaningful: bool) -> int | None:
    """Returns the runs a baseline's case is timed again with, or None. Its batches held
    `runs` runs from an estimate (`baseline_runs`); where `batch_runs` would hold more than
    `RETIME_SLACK` times as many at the `median_us` they measured, they were too short. The
    go..done handoff is a fixed cost of every batch, so a batch of fewer runs reads a kernel
    slower, and a candidate's batches hold as many runs as its baseline's did
    (`BuiltinWalk._latency`): references whose cases have no floor read faster than
    themselves on small cases before (evidence: RESULTS.md#baseline-batch-runs)."""
    wanted = batch_runs(median_us, meaningful)
    return wanted if wanted > RETIME_SLACK * runs else None


@contextlib.contextmanager
def held_alone(walk, worker):
    """Holds the device for a baseline's whole timing, every case of it: every holder gone
    (`DeviceLock.exclusive(alone=True)`) and every candidate worker but `worker` stopped.
    Its numbers are the denominator of every speedup of the task. One hold per task, not
    one per case: each such hold waits for every walk's device work to end and holds new
    work back meanwhile, and per case those waits stalled every walk for most of a
    reference pass on a GPU (8 workers waited 40-62% of their time, RESULTS.md §34).
    Yields the processes of the suite's reference runs it went ahead beside (stopped with
    the candidate pool, whose workers run them), for the timed cases' log."""
    c = walk.c
    with c.device_lock.exclusive(alone=True) as beside, _quiet(c), (
            c.candidates.frozen(but=worker) if c.candidates else contextlib.nullcontext()):
        yield beside


def _quiet(c) -> contextlib.AbstractContextManager:
    """`quiet` over the walk's pools, where `QUIET` says so."""
    if QUIET == "off":
        return contextlib.nullcontext()
    return quiet([c.candidates, c.baselines, c.checkers], starts=QUIET == "all")


def settled(per_run_us: list[float]) -> bool:
    """Whether a GPU case's batches so far (their per-run latencies) are enough: at least
    `SETTLED_BATCHES`, all within `SETTLED_SPREAD` of their median."""
    if len(per_run_us) < SETTLED_BATCHES:
        return False
    return (max(per_run_us) - min(per_run_us)) <= SETTLED_SPREAD * statistics.median(per_run_us)


def gpu_stop(per_run_us: list[float]) -> str | None:
    """Returns why a GPU case's batches so far (their per-run latencies) are enough, None
    while another is due: "settled" (`settled` over the last `GPU_BATCHES`), "batches" (that
    many, their median no slower than `WARM_DRIFT` times their last `SETTLED_BATCHES`'),
    "warmed" (more were run until it was), "warming" (`MAX_GPU_BATCHES` were not enough).
    Later batches replace earlier ones only where they read faster on fresh inputs by the
    judge's clock, baseline and candidate alike: a slow start costs device time, not latency."""
    window = per_run_us[-GPU_BATCHES:]
    if settled(window):
        return "settled"
    if len(per_run_us) < GPU_BATCHES:
        return None
    if statistics.median(window) <= WARM_DRIFT * statistics.median(per_run_us[-SETTLED_BATCHES:]):
        return "batches" if len(per_run_us) == GPU_BATCHES else "warmed"
    return "warming" if len(per_run_us) >= MAX_GPU_BATCHES else None


def arm_wait_s(method: str, armed_before: bool) -> float:
    """Returns how long the judge waits for a batch's arm: `ARM_S`, or `ARM_BLOCKED_S` for an
    eager case (`method`, `time_case`'s) of a walk whose worker let an earlier batch's arm
    run past it (`armed_before` False). A captured graph's arm enqueues its replay, no host
    code: it is waited for in full whatever went before."""
    return ARM_BLOCKED_S if method == "judge-eager" and not armed_before else ARM_S


def _already_held(**_) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext([])


def time_case(walk, worker, checker, case, token: str, runs: int,
              give_up_us: float | None = None, alone: list | None = None) -> dict:
    """Returns the stats of case `case` of the module loaded in `worker` (the walk's), every
    batch judged: {"median_us", "p20_us", "p80_us", "runs", "method", "stopped"}. A judged
    failure raises Failed at stage "timed". `give_up_us`: past two batches whose fastest run
    is slower, the case stops as "slower" (a clear loser); on a GPU, batches that agree stop
    it as "settled" (`settled`). `alone`: a baseline's denominator, inside the caller's
    `held_alone` (what it yielded), so the case takes no hold of its own. Timed by
    CPU time, every other candidate worker is stopped too: a neighbour's work on the host
    slows the timed tree's own (shared caches and cores), and copies of one file scattered
    1.8x under load (RESULTS.md#interpreter-clock)."""
    c = walk.c
    share = worker.shares and checker.shares
    shared = (_already_held if alone is not None else
              functools.partial(c.device_lock.shared, process=(worker, checker)))
    with shared():
        opened = walk._request(checker, {"op": "timed_open", "params": case.params,
                                         "runs": runs, "token": token, "share": share,
                                         "dir": worker.input_dir}, c.limits.check_s)
        runs, method = opened["runs"], "cpu"
        if share:
            for tag in (token, token + host_words.TAG):
                relay_fd(checker, worker, tag, c.limits.check_s)
            staged = walk._request(worker, {"op": "timed_stage", "where": opened["shared"],
                                            "token": token}, c.limits.bench_s)
            walk.observe(worker, staged)
    if share:  # records the runs, launches none (but `WARM`): host work a timing goes ahead beside
        with shared(compiling=not WARM):
            captured = walk._request(worker, {"op": "timed_capture", "warm": WARM},
                                     c.limits.bench_s)
        walk.observe(worker, captured)
        method = f"judge-{captured['method']}"
    batches = MAX_GPU_BATCHES if share else 1 + INTERPRETER_BATCHES
    per_run_us, stopped_by, fill_gbps, quieted = [], "batches", [], None

    def close() -> None:  # the checker's buffers of this case's runs
        with shared():
            walk._request(checker, {"op": "timed_close", "token": token}, c.limits.check_s)

    try:
        # One hold for all of a case's batches: each hold waits for the device to drain, and
        # a hold per batch (its fresh inputs and judgement outside) made those waits most of
        # a GPU walk's time. The checker makes every batch's inputs inside `release`.
        with contextlib.ExitStack() as hold:
            if alone is not None:  # a baseline's hold is quiet and stopped already (`held_alone`)
                beside = alone
            else:
                beside = hold.enter_context(c.device_lock.exclusive())
                hold.enter_context(_quiet(c))
                # the holders it went ahead beside launch nothing more (`DeviceLock.exclusive`)
                hold.enter_context(c.candidates.frozen(but=worker) if not share and c.candidates
                                   else stopped(p for p in beside if p not in (worker, checker)))
            if share and any(p not in (worker, checker) for p in beside):
                # what the stopped holders queued still runs: wait for it before the clock
                reply = walk._request(checker, {"op": "timed_quiet", "token": token,
                                                "limit_s": DEVICE_QUIET_S}, c.limits.check_s)
                quieted = {key: reply[key] for key in ("quiet", "probes", "waited_ms")}
            for number in range(batches):
                if share:
                    elapsed_us, outputs, gbps = _gpu_batch(walk, worker, checker, token,
                                                           alone is not None, method)
                    fill_gbps.append(gbps)
                    _judged(walk, checker, token, outputs, case, worker)
                else:
                    elapsed_us, outputs = _cpu_batch(walk, worker, checker, token, number, case)
                walk.bench_s += elapsed_us * 1e-6
                if not share and number == 0:
                    continue
                per_run_us.append(elapsed_us / runs)
                if (give_up_us is not None and len(per_run_us) >= 2 and min(per_run_us)
                        > give_up_us * (1.0 if c.device.timing_meaningful else INTERPRETER_LOSER_SLACK)):
                    stopped_by = "slower"
                    break
                if share and (stop := gpu_stop(per_run_us)):
                    stopped_by = stop
                    break
    except BaseException:
        # the fault that ended the timing is the verdict's: a checker it killed cannot close
        with contextlib.suppress(Failed, WorkerFault):
            close()
        raise
    close()
    ordered = sorted(per_run_us[-GPU_BATCHES:] if share else per_run_us)
    stats = {"median_us": statistics.median(ordered),
             "p20_us": ordered[int(0.2 * (len(ordered) - 1))],
             "p80_us": ordered[math.ceil(0.8 * (len(ordered) - 1))],
             "runs": runs * len(ordered), "batch_runs": runs, "method": method,
             "stopped": stopped_by}
    c.meter.timed_case({"task": walk.task.name, "case": case.name,
                        "candidate": walk.candidate.id if walk.candidate else None,
                        "per_run_us": per_run_us, "fill_gbps": fill_gbps,
                        "beside": len(beside), "quiet": quieted, **stats})
    return stats


def _gpu_batch(walk, worker, checker, token: str, baseline: bool,
               method: str) -> tuple[float, list, float]:
    """One batch by the judge's clock: the worker is asked to arm behind a fresh `go`, the
    checker releases it (after `arm_wait_s` at most) and times go..done (`TimedBatch.release`).
    Returns the microseconds, the worker's outputs and the fill's GB/s (for the meter).
    Fills another context cut fail a candidate, never a `baseline` (trusted code: the cuts
    were a neighbour's)."""
    c = walk.c
    go = _DRAW.randrange(1, 2**31)  # the host words start at 0
    request = {"op": "arm", "go": go, "wake": WAKE}
    deadline = worker.start(request, c.limits.bench_s)
    armed = worker.early(arm_wait_s(method, walk.armed_in_time))
    walk.armed_in_time = walk.armed_in_time and armed is not None
    if armed is not None and not armed.get("ok"):  # it failed before `go`: nothing to time
        raise Failed("timed", armed.get("kind", "runtime_error"), str(armed.get("trace", "")))
    released = walk._request(checker, {"op": "timed_release", "token": token, "go": go,
                                       "limit_s": c.limits.bench_s, "cut_fails": not baseline,
                                       "turn": TURN},
                             c.limits.bench_s + GRACE_S)
    if released.get("timeout"):
        worker.kill()
        raise Failed("timed", "timeout", released["timeout"])
    if released.get("fill_cut"):  # its GPU work ran through the judge's fills (`TimedBatch.fill`)
        worker.kill()
        raise Failed("timed", "cheat_background_work", released["fill_cut"])
    reply = armed or worker.finish(request, deadline, c.limits.bench_s)
    if not reply.get("ok"):
        raise Failed("timed", reply.get("kind", "runtime_error"), str(reply.get("trace", "")))
    walk.observe(worker, reply)
    return released["elapsed_us"], reply.get("outputs"), released["fill_gbps"]


def _cpu_batch(walk, worker, checker, token: str, number: int, case) -> tuple[float, None]:
    """One batch by the worker's CPU time, read from outside: before the checker writes the
    inputs, and after the reply with the worker's process tree stopped, while the checker
    reads and judges the outputs."""
    c = walk.c
    prefix = f"{token}b{number}"
    before = worker.cpu()
    files = walk._request(checker, {"op": "timed_files", "token": token, "prefix": prefix},
                          c.limits.check_s)["runs"]
    reply = walk._request(worker, {"op": "run_batch", "runs": files, "prefix": prefix},
                          c.limits.bench_s)
    with worker.frozen():
        elapsed_us = worker.cpu().since(before) * 1e6
        walk.observe(worker, reply)
        _judged(walk, checker, token, reply.get("outputs"), case, worker)
    return elapsed_us, None


def _judged(walk, checker, token: str, outputs, case, worker) -> None:
    """Has the checker judge the batch (`TimedBatch.judge`); raises Failed on a wrong run."""
    verdict = walk._request(checker, {"op": "timed_judge", "token": token, "outputs": outputs,
                                      "dir": worker.workdir}, walk.c.limits.check_s)
    if verdict["kind"] is not None:
        raise Failed("timed", verdict["kind"], f"case {case.name!r}, {verdict['detail']}",
                     verdict)
