"""The fitness cascade: syntax -> static gate -> import -> compile (on stand-ins, launching
nothing) -> first launch -> correctness -> latency -> re-check. This is the judge; it runs
in the engine's process.

One candidate walks the stages on one leased sandboxed worker and one leased trusted
checker; the first failure ends the walk and names its kind. Every judgement is made on
the trusted side: the static gate here, inputs and reference outputs in the checker (from
seeds drawn from the operating system's RNG, so no candidate can predict them), the
comparison in the checker, every latency by the checker's clock, and the decision here.
What the worker reports (its observations) is evidence that explains a failure; no number it
reports enters a verdict.
"""

from __future__ import annotations

import ast
import concurrent.futures
import math
import inspect
import itertools
import random
import time

from evo.records import Candidate, Evaluation, Task, parse_source
from fitness import harness_version
from fitness.measure import timing
from fitness.device import AMD_ONLY_LAUNCH_OPTIONS, DeviceInfo
from fitness.judge import anticheat, clock, harness, timing_report, walk
from fitness.judge import policy
from fitness.judge.activity import Activity
from fitness.judge.case_errors import CaseErrors
from fitness.judge.static_checks import missing_entry_point
from fitness.judge.walk import Failed, Walk, described
from fitness.judge.walk_gate import WalkGate
from fitness.settings import Limits
from fitness.measure.meter import Meter
from fitness.judge.latency_memory import GIVE_UP_FACTOR, BestLatency, ReferenceMemo
from fitness.processes.pool import WorkerFault, relay_fd

BASELINE_JOBS = 2
"""Baselines warmed and timed at once, each on a checker of its own (`BuiltinWalk.time_baseline`):
the Evaluator's checker pool holds this many beside one per candidate worker."""


def amd_only_options(source: str) -> list[str]:
    """Returns the AMD-only launch options a module passes (keyword arguments or config keys)."""
    found = set()
    for node in ast.walk(parse_source(source)):
        if isinstance(node, ast.keyword) and node.arg in AMD_ONLY_LAUNCH_OPTIONS:
            found.add(node.arg)
        elif isinstance(node, ast.Constant) and node.value in AMD_ONLY_LAUNCH_OPTIONS:
            found.add(node.value)
    return sorted(found)


class Cascade:
    """Walks candidates through the stages using the given pools, device lock and limits:
    a built-in task's candidates by `BuiltinWalk`'s plan, an external suite's by its own harness
    (`harness.HarnessWalk`). `harness_seed` salts every seed an external harness sets (None:
    drawn at random; with `salt_harness_seeds` False the harness keeps the suite's own).
    `give_up`: a clear loser's other cases go untimed (`BuiltinWalk._latency`)."""

    def __init__(self, device: DeviceInfo, candidates, checkers, device_lock,
                 limits: Limits = Limits(),
                 static_gate: bool = True, harness_seed: int | None = None,
                 salt_harness_seeds: bool = True, baselines=None, give_up: bool = True):
        self.device = device
        self.give_up = give_up
        self.static_gate = static_gate
        self.candidates = candidates
        # workers that load a task's baseline: a pool of their own, or a walk holding the
        # last candidate worker waits for a baseline job that waits for a worker
        self.baselines = baselines or candidates
        self.checkers = checkers
        self.device_lock = device_lock
        self.limits = limits
        self.best = BestLatency()
        self.meter = Meter()
        self._baseline_runner = concurrent.futures.ThreadPoolExecutor(
            BASELINE_JOBS, thread_name_prefix="baseline")
        self.references = ReferenceMemo(self._baseline_runner, kept=(harness.HarnessError,))
        self._seeds = random.SystemRandom()
        if harness_seed is None:
            harness_seed = self._seeds.randrange(1, 2**30)
        self.harness_seed = harness_seed if salt_harness_seeds else None
        self.walks = itertools.count()  # numbers the walks; each names its calls by it
        self.walks_gate = WalkGate()  # a walk that ran out of memory goes again alone

    def evaluate(self, task: Task, candidate: Candidate,
                 activity: Activity | None = None) -> Evaluation:
        """Returns the candidate's Evaluation; never raises for anything the candidate does.
        `activity`: kept up to date with the walk's stage and request (`Activity`)."""
        plan = BuiltinWalk if task.harness is None else harness.HarnessWalk
        return walk.walk(plan, self, task, candidate, activity or Activity(task.name, candidate.id))

    def seed(self) -> int:
        return self._seeds.getrandbits(62)

    def choose(self, items: list):
        """Returns one of `items`, drawn from the operating system's RNG."""
        return self._seeds.choice(items)

    def shuffle(self, items: list) -> None:
        """Shuffles `items` in place from the operating system's RNG."""
        self._seeds.shuffle(items)

    def close(self) -> None:
        """Stops starting baseline jobs (the pools' close ends those under way)."""
        self._baseline_runner.shutdown(wait=False, cancel_futures=True)


def timing_order(baseline: list[dict]) -> list[int]:
    """Returns the order cases are timed in: the representative case (the one the baseline
    takes longest on) first, then the others as the task lists them."""
    first = max(range(len(baseline)), key=lambda at: baseline[at]["median_us"])
    return [first] + [at for at in range(len(baseline)) if at != first]


def _arity(reference) -> int:
    """Returns how many positional arguments the reference takes (the candidate must too)."""
    parameters = inspect.signature(reference).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


class BuiltinWalk(Walk):
    """The built-in plan: a candidate's walk on one leased sandboxed worker and one leased
    trusted checker, judged call by call against the task's PyTorch reference."""

    def __init__(self, cascade: Cascade, task: Task, candidate: Candidate | None,
                 activity: Activity | None = None):
        super().__init__(cascade, task, candidate, activity)
        self.cases = task.cases_for(cascade.device.backend)
        self._calls = 0
        # in every token: a checker drops what an earlier, failed walk left (files in a
        # worker's input directory) when it is next reset, by name, maybe while another
        # walk uses that worker
        self._walk_number = next(cascade.walks)
        self._launched_before = False
        self.errors = CaseErrors([case.name for case in self.cases])

    def static_checks(self) -> None:
        """`Walk.static_checks`, then what this walk needs: a reference and inputs to check
        against, and no AMD-only launch option on an NVIDIA GPU."""
        super().static_checks()
        if self.task.reference is None or self.task.make_inputs is None:
            raise Failed("syntax", "harness_error", f"task {self.task.name!r} has no PyTorch "
                         "reference or no input generator: the cascade cannot check it")
        amd_only = amd_only_options(policy.runnable_source(self.candidate.source, self.task))
        if amd_only and self.c.device.backend == "cuda":
            raise Failed("compile", "unsupported_on_backend", f"launch option(s) "
                         f"{', '.join(amd_only)} exist only on AMD GPUs; Triton rejects them on "
                         f"NVIDIA ({self.c.device.name}). Remove them for this device.")

    def _prepare(self, checker, worker, case, seed: int,
                 check_inputs: bool = False) -> tuple[str, dict]:
        """Has the checker make one call's inputs (on the device: the caller holds the
        gate, shared); returns (token, where the worker finds them): a shared GPU buffer
        whose descriptor is relayed here from the checker to the worker, or raw files in
        the worker's input directory."""
        token = self._token()
        share = worker.shares and checker.shares
        prepared = self._request(checker, {"op": "prepare", "params": case.params,
                                           "seed": seed, "dir": worker.input_dir,
                                           "prefix": token, "token": token,
                                           "check_inputs": check_inputs,
                                           "share": share},
                                 self.c.limits.check_s)
        if "shared" not in prepared:
            return token, {"specs": prepared["specs"]}
        relay_fd(checker, worker, token, self.c.limits.check_s)
        return token, {"shared": prepared["shared"], "token": token}

    def _call(self, worker, checker, case, seed: int, limit_s: float,
              compiling: bool = False) -> dict:
        """One call of the candidate on fresh inputs, judged; returns the checker's verdict.
        Every call is also verified to leave its inputs unchanged (a candidate that changed
        them from its third call on went unseen when only a case's first call was).
        `compiling`: the first call, mostly Triton's compiler (see `DeviceLock`), held apart
        from its short prepare and compare. Any other call is one shared hold from prepare
        to compare (short): a waiting timing run then delays this walk once per call,
        not once per request."""
        if compiling:
            with self.c.device_lock.shared(process=checker):
                token, inputs = self._prepare(checker, worker, case, seed, check_inputs=True)
            with self.c.device_lock.shared(compiling=True, process=worker):
                reply = self._called(worker, token, inputs, limit_s)
            with self.c.device_lock.shared(process=checker):
                return self._compare(checker, worker, token, reply, case)
        # the checker named too: its reference's device work (an external suite's Triton
        # reference, autotuned) ran unstopped beside the timings that went ahead of it
        with self.c.device_lock.shared(process=(worker, checker)):
            token, inputs = self._prepare(checker, worker, case, seed, check_inputs=True)
            reply = self._called(worker, token, inputs, limit_s)
            return self._compare(checker, worker, token, reply, case)

    def _called(self, worker, token: str, inputs: dict, limit_s: float) -> dict:
        """Has the worker call the candidate; returns its reply once the call is judged."""
        reply = self._request(worker, {"op": "call", "inputs": inputs,
                                       "prefix": token, "with_inputs": True}, limit_s)
        self._judge(worker, reply.get("observed", {}), self.stage)
        return reply

    def _compare(self, checker, worker, token: str, reply: dict, case) -> dict:
        """Has the checker judge a call's outputs (the caller holds the gate, shared)."""
        verdict = self._request(checker, {"op": "compare", "token": token,
                                          "dir": worker.workdir,
                                          "outputs": reply.get("outputs", []),
                                          "inputs_after": reply.get("inputs_after", [])},
                                self.c.limits.check_s)
        self.fields["call_ok"] = True  # it ran and returned outputs; now they are judged
        if verdict["kind"] is not None:
            stage = "timed" if self.stage == "timed" else "correct"
            raise Failed(stage, verdict["kind"], f"case {case.name!r}: {verdict['detail']}", verdict)
        return verdict

    def _judge(self, worker, observed: dict, stage: str) -> None:
        """Raises Failed when a call's observations break an anti-cheat rule."""
        verdict = anticheat.call_verdict(self.task, observed if isinstance(observed, dict) else {})
        if verdict is None:
            self._launched_before = self._launched_before or observed.get("launches", 0) > 0
            return
        if verdict[0] in anticheat.TAINTING_KINDS:
            worker.retired = True  # the process itself was altered: never reuse it
        if verdict[0] == "no_triton_launch" and self._launched_before:
            verdict = ("cheat_cached_result", "a call on new inputs launched no kernel although "
                       "earlier calls did: the candidate replayed a stored result")
        raise Failed(stage, *verdict)

    def run(self) -> None:
        self._baseline_job()  # waited for at timing
        asked = time.monotonic()
        with self.c.candidates.lease() as worker:
            self.c.meter.request("candidate.lease", time.monotonic() - asked, self.task.name)
            asked = time.monotonic()
            with self.c.checkers.lease() as checker:
                self.c.meter.request("checker.lease", time.monotonic() - asked, self.task.name)
                self._walk(worker, checker)
        self.fields["correct"] = True

    def _walk(self, worker, checker) -> None:
        """The stages on one leased worker and checker: import, compiling (holding no
        device), the first call, correctness, timing."""
        limits = self.c.limits
        self._reset(checker)
        self.stage = "import"
        start = time.monotonic()
        loaded = self._load(worker)
        if loaded.get("patched"):
            self._judge(worker, loaded, "import")
        self.stage = "run"  # compiling on stand-ins, then the first call launches
        try:  # a stage's seconds are kept when it fails too (a compile that ran out of time)
            compiled = self._precompile(worker, checker)
            self._checked(worker, checker, 0, self.c.seed(), limits.compile_s,
                          compiling=not compiled)
        finally:
            self.compile_s = time.monotonic() - start
        self.fields["call_ok"] = True
        self.stage = "correct"
        start = time.monotonic()
        try:
            self._correctness(worker, checker)
        finally:
            self.check_s = time.monotonic() - start
        self.stage = "timed"
        self._latency(worker, checker)
        self.fields["correct"] = True

    def _load(self, worker, source: str | None = None) -> dict:
        """Has the worker import the candidate (no timing beside an import's device work);
        a missing entry point is told in the judge's words, from the source: what the module
        defines instead."""
        limits = self.c.limits
        try:
            with self.c.device_lock.shared(loading=True, process=worker):
                return self._request(worker, {"op": "load",
                                              "source": source or policy.runnable_source(
                                                  self.candidate.source, self.task),
                                              "entry_point": self.task.entry_point,
                                              "arity": _arity(self.task.reference),
                                              "written": list(self.task.written),
                                              "entry_call": self.task.entry_call,
                                              "stall_s": limits.stall_s},
                                     limits.import_s)
        except Failed as failed:
            if failed.kind != "missing_entry_point":
                raise
            raise Failed(failed.stage, failed.kind, missing_entry_point(
                self.candidate.source, self.task.entry_point)) from None

    def _reset(self, checker) -> None:
        """Has the checker forget its last walk and hand its device memory back, under the
        shared hold: freeing device memory unmaps it, and a timing run beside an unmap runs
        slow in all its runs (RESULTS.md §6l)."""
        with self.c.device_lock.shared(process=checker):
            self._request(checker, {"op": "reset"}, self.c.limits.check_s)

    def _precompile(self, worker, checker) -> bool:
        """Has the worker compile the candidate for every case before its first call, on
        stand-ins of the inputs (`Worker.precompile`), holding nothing: it launches no
        kernel, so it runs while other candidates are timed instead of waiting for them, and
        the correctness calls that follow hold the device only for device work (a call that
        compiled inside its hold kept a timing run waiting). The cases' input layouts come
        from a checker, once per task. Returns whether the worker says it got through every
        case (if not, the first call is held as compiling). Its word picks only a hold, and
        the name of a failure: a candidate that would have launched here and launches
        nothing in its first call replays what it stored here (`_judge`). Running out of
        time here is a compile failure (stage "compile"): the candidate's own host code
        cannot hold it that long (the stall watch ends a host loop within `stall_s`), while
        a Triton compile of a kernel that spills registers can (RESULTS.md#slow-compile)."""
        layouts, limit_s = self._layouts(checker), self.c.limits.compile_s
        sent = time.monotonic()
        try:
            reply = self._request(worker, {"op": "precompile", "cases": layouts}, limit_s)
        except WorkerFault as fault:
            if fault.kind != "timeout" or time.monotonic() - sent < limit_s:
                raise
            raise Failed("compile", "timeout", described(fault, (
                f"compiling the candidate's kernels for its {len(layouts)} cases (on stand-ins, "
                f"nothing launched) ran past the {limit_s:g} s compile limit "
                "([fitness] timeouts.compile)"))) from None
        withheld = reply.get("withheld")
        self._launched_before = isinstance(withheld, int) and withheld > 0
        return reply.get("stopped") is None

    def _layouts(self, checker) -> list:
        """Returns the input layouts of the task's cases (`protocol.layouts`: what Triton
        specialises on), which a checker describes once per task (`Cascade.references`)."""
        def describe() -> list:
            with self.c.device_lock.shared(process=checker):
                return self._request(checker, {"op": "describe", "cases": [
                    (case.params, self.c.seed()) for case in self.cases]},
                    self.c.limits.check_s)["cases"]

        return self.c.references.get((self.task.suite, self.task.name, "layouts"), describe)

    def _correctness(self, worker, checker) -> None:
        """Every case on new inputs; the first case once more on new inputs (a replayed
        result is caught at once), and the last, largest case once more on its own inputs
        (the same inputs twice must give the same outputs: determinism). Those two extra
        calls are skipped once a case is wrong: the verdict is a mismatch then."""
        limit_s = self.c.limits.check_s
        if not self.errors.wrong:
            self._checked(worker, checker, 0, self.c.seed(), limit_s, again=True)
        seed = None
        for at in range(1, len(self.cases)):
            seed = self.c.seed()
            self._checked(worker, checker, at, seed, limit_s)
        if seed is not None and not self.errors.wrong:
            self._checked(worker, checker, len(self.cases) - 1, seed, limit_s, again=True)
        self.fields.update(self.errors.fields())
        if self.errors.wrong:
            raise self.errors.first_mismatch()

    def _checked(self, worker, checker, at: int, seed: int, limit_s: float,
                 again: bool = False, **options) -> None:
        """`_call` on case `at`, its errors noted in `self.errors` (`again`: a case's extra
        call, noted only when wrong). A mismatch is noted and the walk goes on to the other
        cases; once a case is wrong, any other failure ends the walk with that mismatch."""
        try:
            verdict = self._call(worker, checker, self.cases[at], seed, limit_s, **options)
        except Failed as failed:
            if failed.kind != "mismatch":
                self._end_if_wrong(failed.kind)
                raise
            self.errors.wrong_at(at, failed)
            return
        except WorkerFault as fault:
            self._end_if_wrong(fault.kind)
            raise
        if not again:
            self.errors.note(at, verdict)

    def _end_if_wrong(self, stopped_by: str) -> None:
        """Ends the walk with its first mismatch, if a case was wrong before `stopped_by`."""
        if self.errors.wrong:
            self.fields.update(self.errors.fields())
            raise self.errors.first_mismatch(stopped_by) from None

    def _case_keys(self) -> list[tuple]:
        version = harness_version(self.task.suite)
        return [(self.task.name, case.name, self.c.device.name, version) for case in self.cases]

    def _baseline_job(self) -> concurrent.futures.Future:
        """Returns the job that warms and times the task's baseline (`time_baseline`), started
        unless one is under way or has succeeded. A walk starts it when it begins and waits
        for it only when it reaches timing, so the baseline's compile overlaps the
        candidate's compile and correctness instead of holding up every walk of the task
        that reaches timing first."""
        task = self.task
        return self.c.references.start((task.suite, task.name, "timings"),
                                       BuiltinWalk(self.c, task, None).time_baseline)

    def time_baseline(self) -> list[dict]:
        """Returns the baseline's stats per case, timed through the candidates' path (a
        fresh worker loads the baseline module, the judge's clock times it) with the device
        held alone for all its cases (`clock.held_alone`), once per task (`Cascade.references`)."""
        self.stage = "timed"
        try:
            with self.c.baselines.lease() as worker, self.c.checkers.lease() as checker:
                self._reset(checker)
                self._load(worker, self.task.baseline_source)
                compiled = self._precompile(worker, checker)
                if self.c.device.timing_meaningful:
                    self._warm_every_case(worker, checker, compiled)
                with clock.held_alone(self, worker) as beside:
                    stats = []
                    for case in self.cases:
                        previous_us = stats[-1]["median_us"] if stats else None
                        stats.append(self._time_baseline_case(worker, checker, case, beside,
                                                              previous_us))
        except (Failed, WorkerFault) as failure:
            # out of memory beside other walks is theirs: the walk goes again alone, and so
            # does this job (a failed one is started again); alone, it is the task's
            kind = failure.kind if walk.crowded_out(self.c, failure.kind) else "harness_error"
            raise Failed("timed", kind, f"the task's baseline failed its timing "
                         f"({failure.kind}): {failure.detail}") from None
        for key, case_stats in zip(self._case_keys(), stats):
            self.c.best.offer(key, case_stats["median_us"])  # a real timing, kept or not
        self.c.meter.kernel_time(stats)
        return stats

    def _warm_every_case(self, worker, checker, compiled: bool) -> None:
        """Calls the baseline once on every case, judged, before its hold (on a GPU): a kernel
        autotuned on its shapes (`key=['M', 'N', 'K']`: 47 of TritonBench-revised's 184
        references) benchmarks its configurations at its first call of each case, and inside
        the hold, which stops every other walk, that was 5-6 s of every case
        (int8_matmul_quantization: 30 cases, 160 s; evidence: RESULTS.md#autotune-in-hold).
        A candidate autotunes in its correctness calls, under the shared hold; the baseline
        now does where the candidate does. `compiled`: `_precompile`'s word."""
        for at, case in enumerate(self.cases):
            first = at == 0
            self._call(worker, checker, case, self.c.seed(),
                       self.c.limits.compile_s if first else self.c.limits.check_s,
                       compiling=first and not compiled)

    def _time_baseline_case(self, worker, checker, case, beside: list,
                            previous_us: float | None) -> dict:
        """Returns one case's stats of the baseline, inside its `held_alone` (`beside`: what
        it yielded): in batches of the runs a roofline floor asks for, or the latency of the
        case before (`previous_us`: `clock.baseline_runs`), then again with more where those
        were too short for the latency they measured (`clock.retimed_runs`; the first timing
        a probe)."""
        meaningful = self.c.device.timing_meaningful
        floors = timing.case_floors_us(self.c.device, self.task.flops, self.task.bytes, case.params)
        runs = clock.baseline_runs(max(floors) if floors else None, previous_us, meaningful)
        timed = clock.time_case(self, worker, checker, case, self._token(), runs, alone=beside)
        more = clock.retimed_runs(runs, timed["median_us"], meaningful)
        # not where the batch buffer's size (`BATCH_BYTES`) held them short: the same again
        if more is None or timed["batch_runs"] < runs:
            return timed
        return clock.time_case(self, worker, checker, case, self._token(), more, alone=beside)

    def _latency(self, worker, checker) -> None:
        """Times the candidate case by case by the judge's clock (`clock.time_case`): the
        representative case first (the baseline's slowest: where the work is), the others
        in an order drawn at random. A candidate surely slower on the representative case
        than `GIVE_UP_FACTOR` times the best seen is a clear loser: its other cases are not
        timed (their latency is None), which spares most of the device time spent on
        losers."""
        baseline = self._baseline_job().result()
        give_up = [self._give_up(key) for key in self._case_keys()]
        stats: list[dict | None] = [None] * len(self.cases)
        for position, at in enumerate(self._timing_order(baseline)):
            # the baseline's runs a batch: the handoff's fixed cost is the same share of both
            stats[at] = clock.time_case(self, worker, checker, self.cases[at], self._token(),
                                        baseline[at]["batch_runs"],
                                        give_up[at] if position == 0 else None)
            if stats[at]["stopped"] == "slower":
                break
        with self.c.device_lock.shared(process=worker):  # freeing device memory unmaps it
            self._request(worker, {"op": "release"}, self.c.limits.check_s)
        self.c.meter.kernel_time([s for s in stats if s is not None])
        self._record_speed(stats, baseline)

    def _token(self) -> str:
        """Returns a new name for a request's files and buffers, unique in the walk."""
        self._calls += 1
        return f"w{self._walk_number}c{self._calls}"

    def observe(self, worker, reply: dict) -> None:
        """Judges the audit observations a timed request's reply carries (a baseline's walk
        has no candidate to judge)."""
        if self.candidate is not None:
            self._judge(worker, reply.get("observed") or {}, "timed")

    def _timing_order(self, baseline: list[dict]) -> list[int]:
        """Returns the order cases are timed in: `timing_order`'s first, the rest shuffled."""
        first, *rest = timing_order(baseline)
        self.c.shuffle(rest)
        return [first] + rest

    def _give_up(self, key) -> float | None:
        best = self.c.best.get(key) if self.c.give_up else None
        return None if best is None else GIVE_UP_FACTOR * best

    def _record_speed(self, stats: list[dict | None], baseline: list[dict]) -> None:
        device = self.c.device
        roofline = []
        for case, measured in zip(self.cases, stats):
            if measured is None:  # not timed: a clear loser on the representative case
                continue
            fraction = timing.case_roofline(device, self.task.flops, self.task.bytes,
                                            case.params, measured["median_us"])
            reason = anticheat.implausible(fraction, case.name)
            if reason:
                raise Failed("timed", "cheat_implausible", reason)
            roofline.append(fraction)
        for key, measured in zip(self._case_keys(), stats):  # timed, re-checked, plausible
            if measured is not None:
                self.c.best.offer(key, measured["median_us"])
        known = [f for f in roofline if f]
        total = self.task.suite == "tritonbench-revised"  # GEAK-eval's aggregate
        self.fields.update(timing_report.speedup_fields(stats, baseline, total=total), roofline_fraction=(
            math.exp(sum(math.log(f) for f in known) / len(known)) if known else None))
