"""The fitness cascade: syntax -> import -> compile + first launch -> correctness -> latency -> re-check.

One candidate walks the stages on one leased worker; the first failure ends the walk and
names its kind. Correctness uses fresh seeds for every call, drawn from an RNG seeded by
(candidate id, harness version), so an evaluation is reproducible yet no two checks share
inputs. Outputs are compared by a checker worker the candidate never ran in.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import random
import threading
import time
from typing import Mapping

from evo.records import Candidate, Evaluation, Task
from fitness import HARNESS_VERSION, anticheat, timing
from fitness.device import AMD_ONLY_LAUNCH_OPTIONS, DeviceInfo
from fitness.pool import WorkerFault

CALLS_PER_CASE_FIRST = 2
"""Correctness calls on the first case, each on new inputs: the second catches replayed
results at once. Every other case gets one call here; the re-check after timing gives each
case its second call on fresh inputs, so no case is trusted on one input set."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Time limit of each stage, in seconds; a stage past its limit is killed.

    Attributes:
      import_s: writing and importing the candidate module.
      compile_s: the first call (Triton compilation and first launch).
      check_s: each further correctness call, and each comparison in the checker.
      bench_s: timing every case plus the re-check call.
      ready_s: a new worker's start-up (charged to no candidate).
    """

    import_s: float = 60.0
    compile_s: float = 180.0
    check_s: float = 60.0
    bench_s: float = 300.0
    ready_s: float = 120.0

    @classmethod
    def from_mapping(cls, values: Mapping[str, float] | None) -> "Limits":
        """Returns Limits from {"import_s": 30, "compile": 60, ...}; unknown keys raise."""
        names = {field.name for field in dataclasses.fields(cls)}
        chosen = {}
        for key, value in (values or {}).items():
            name = key if key.endswith("_s") else f"{key}_s"
            if name not in names:
                raise ValueError(f"unknown fitness timeout {key!r}; known: {sorted(names)}")
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"fitness timeout {key!r} must be a positive number, got {value!r}")
            chosen[name] = float(value)
        return cls(**chosen)

    @classmethod
    def uniform(cls, seconds: float) -> "Limits":
        """Returns the same limit for every candidate stage (start-up keeps its default)."""
        return cls(import_s=seconds, compile_s=seconds, check_s=seconds, bench_s=seconds)


class BaselineCache:
    """Baseline latency stats keyed by (task, case, device, harness version)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stats: dict[tuple[str, str, str, str], dict] = {}

    def get(self, key) -> dict | None:
        with self._lock:
            return self._stats.get(key)

    def put_first(self, key, stats: dict) -> None:
        with self._lock:
            self._stats.setdefault(key, stats)


class _Failed(Exception):
    """Ends the walk: the candidate failed `kind` at `stage`."""

    def __init__(self, stage: str, kind: str, detail: str):
        super().__init__(detail)
        self.stage, self.kind, self.detail = stage, kind, detail


def amd_only_options(source: str) -> list[str]:
    """Returns the AMD-only launch options a module passes (keyword arguments or config keys)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg in AMD_ONLY_LAUNCH_OPTIONS:
            found.add(node.arg)
        elif isinstance(node, ast.Constant) and node.value in AMD_ONLY_LAUNCH_OPTIONS:
            found.add(node.value)
    return sorted(found)


class Cascade:
    """Walks candidates through the stages using the given pools, gate and caches."""

    def __init__(self, device: DeviceInfo, candidates, checkers, gate, baselines: BaselineCache,
                 limits: Limits, exchange_dir: str, timing_config: timing.TimingConfig | None = None):
        self.device = device
        self.candidates = candidates
        self.checkers = checkers
        self.gate = gate
        self.baselines = baselines
        self.limits = limits
        self.timing_config = timing_config
        self._exchange_dir = exchange_dir
        self._files = 0
        self._files_lock = threading.Lock()

    def evaluate(self, task: Task, candidate: Candidate) -> Evaluation:
        """Returns the candidate's Evaluation; never raises for anything the candidate does."""
        walk = _Walk(self, task, candidate)
        try:
            walk.run()
        except _Failed as failed:
            walk.fail(failed.stage, failed.kind, failed.detail)
        except WorkerFault as fault:
            tail = f"\n--- worker output (tail) ---\n{fault.output_tail}" if fault.output_tail else ""
            walk.fail(walk.stage, fault.kind, fault.detail + tail)
        return walk.evaluation()

    def out_path(self, candidate_id: str) -> str:
        with self._files_lock:
            self._files += 1
            return os.path.join(self._exchange_dir, f"{candidate_id}-{self._files}.pt")


class _Walk:
    """One candidate's walk through the cascade; accumulates the Evaluation's fields."""

    def __init__(self, cascade: Cascade, task: Task, candidate: Candidate):
        self.c = cascade
        self.task = task
        self.candidate = candidate
        self.cases = task.cases_for(cascade.device.backend)
        self.stage = "syntax"
        self.fields: dict = {"call_ok": False, "correct": False}
        self.compile_s = self.check_s = self.bench_s = 0.0
        self._rng = random.Random(f"{candidate.id}:{HARNESS_VERSION}")
        self._seeds_used: set[int] = set()
        self._paths: list[str] = []
        self._launched_before = False

    def seed(self) -> int:
        """Returns a seed never used before in this evaluation."""
        while True:
            seed = self._rng.getrandbits(62)
            if seed not in self._seeds_used:
                self._seeds_used.add(seed)
                return seed

    def fail(self, stage: str, kind: str, detail: str) -> None:
        self.stage = stage
        self.fields.update(failure_kind=kind, error_trace=detail[-6000:], correct=False)

    def evaluation(self) -> Evaluation:
        for path in self._paths:
            if os.path.exists(path):
                os.remove(path)
        device = self.c.device
        return Evaluation(candidate_id=self.candidate.id, stage_reached=self.stage,
                          device=device.name, backend=device.backend,
                          harness_version=HARNESS_VERSION,
                          timing_meaningful=device.timing_meaningful and self.stage == "timed",
                          compile_s=self.compile_s, check_s=self.check_s, bench_s=self.bench_s,
                          **self.fields)

    def _path(self) -> str:
        path = self.c.out_path(self.candidate.id)
        self._paths.append(path)
        return path

    def _static_checks(self) -> None:
        try:
            ast.parse(self.candidate.source)
        except (SyntaxError, ValueError) as error:
            raise _Failed("syntax", "syntax_error", f"{type(error).__name__}: {error}") from None
        if self.c.device.backend not in self.task.runnable_on:
            raise _Failed("syntax", "unsupported_on_backend", f"task {self.task.name!r} does not "
                          f"run on {self.c.device.backend}: {self.task.skip_reason}")
        if self.task.reference is None or self.task.make_inputs is None:
            raise _Failed("syntax", "harness_error", f"task {self.task.name!r} has no PyTorch "
                          "reference or no input generator: the cascade cannot check it")
        amd_only = amd_only_options(self.candidate.source)
        if amd_only and self.c.device.backend == "cuda":
            raise _Failed("compile", "unsupported_on_backend", f"launch option(s) "
                          f"{', '.join(amd_only)} exist only on AMD GPUs; Triton rejects them on "
                          f"NVIDIA ({self.c.device.name}). Remove them for this device.")

    def _request(self, worker, request: dict, limit_s: float) -> dict:
        reply = worker.request({"task": self.task, **request}, limit_s)
        if not reply.get("ok"):
            kind = reply.get("kind", "harness_error")
            stage = "compile" if kind in ("compile_error", "unsupported_on_backend") else self.stage
            raise _Failed(stage, kind, reply.get("trace", ""))
        return reply

    def _call(self, worker, case, seed: int, limit_s: float) -> str:
        path = self._path()
        with self.c.gate.shared():
            reply = self._request(worker, {"op": "call", "params": case.params, "seed": seed,
                                           "out_path": path}, limit_s)
        self._judge(worker, reply, self.stage)
        return path

    def _judge(self, worker, observed: dict, stage: str) -> None:
        """Raises _Failed when a call broke an anti-cheat rule."""
        verdict = anticheat.call_verdict(self.task, observed)
        if verdict is None:
            self._launched_before = self._launched_before or observed.get("launches", 0) > 0
            return
        if verdict[0] in anticheat.TAINTING_KINDS:
            worker.retired = True  # the process itself was altered: never reuse it
        if verdict[0] == "no_triton_launch" and self._launched_before:
            verdict = ("cheat_cached_result", "a call on new inputs launched no kernel although "
                       "earlier calls did: the candidate replayed a stored result")
        raise _Failed(stage, *verdict)

    def _check(self, case, calls: list[tuple[int, str]]) -> dict:
        with self.c.checkers.lease() as checker, self.c.gate.shared():
            return self._request(checker, {"op": "check", "params": case.params, "calls": calls},
                                 self.c.limits.check_s)

    def run(self) -> None:
        limits = self.c.limits
        self._static_checks()
        # The device is held shared one request at a time, never across a whole walk: a
        # walk waiting to time (exclusive) then waits for one call, not for other walks'
        # entire compile + correctness phases (which serialised an 8-worker pool on a GPU).
        with self.c.candidates.lease() as worker:
            self.stage = "import"
            start = time.monotonic()
            with self.c.gate.shared():
                loaded = self._request(worker, {"op": "load", "source": self.candidate.source},
                                       limits.import_s)
            if loaded.get("patched"):
                self._judge(worker, loaded, "import")
            self.stage = "run"  # the first call compiles, then launches
            first_seed = self.seed()
            first_path = self._call(worker, self.cases[0], first_seed, limits.compile_s)
            self.compile_s = time.monotonic() - start
            self.fields["call_ok"] = True
            self.stage = "correct"
            start = time.monotonic()
            self._correctness(worker, first_seed, first_path)
            self.check_s = time.monotonic() - start
            self.stage = "timed"
            self._latency(worker)
        self.fields["correct"] = True

    def _correctness(self, worker, first_seed: int, first_path: str) -> None:
        max_abs, rel = [], []
        for index, case in enumerate(self.cases):
            calls = [(first_seed, first_path)] if index == 0 else []
            while len(calls) < (CALLS_PER_CASE_FIRST if index == 0 else 1):
                seed = self.seed()
                calls.append((seed, self._call(worker, case, seed, self.c.limits.check_s)))
            verdict = self._check(case, calls)
            if verdict["kind"] is not None:
                raise _Failed("correct", verdict["kind"], f"case {case.name!r}: {verdict['detail']}")
            max_abs.append(verdict["max_abs_err"])
            rel.append(verdict["rel_err"])
        self.fields.update(case_names=tuple(c.name for c in self.cases),
                           max_abs_err=tuple(max_abs), rel_err=tuple(rel))

    def _latency(self, worker) -> None:
        device = self.c.device
        keys = [(self.task.name, case.name, device.name, HARNESS_VERSION) for case in self.cases]
        cached = [self.c.baselines.get(key) for key in keys]
        plan = [(case.params, self.seed(), self.seed(), self._path()) for case in self.cases]
        with self.c.gate.exclusive():  # bench_s counts device time, not the wait for it
            start = time.monotonic()
            try:
                reply = self._request(worker, {"op": "bench",
                                               "cases": [p[:2] for p in plan],
                                               "time_baseline": any(s is None for s in cached),
                                               "timing": self.c.timing_config},
                                      self.c.limits.bench_s)
            finally:
                self.bench_s += time.monotonic() - start
        with self.c.gate.shared():  # the re-check call shares the device with other walks
            start = time.monotonic()
            rechecked = self._request(worker, {"op": "recheck", "cases": [
                (params, recheck_seed, path) for params, _, recheck_seed, path in plan]},
                self.c.limits.bench_s)
            self.bench_s += time.monotonic() - start
        latency, p20, p80, reference, roofline = [], [], [], [], []
        for case, key, stats, result, observed, (_, _, recheck_seed, path) in zip(
                self.cases, keys, cached, reply["cases"], rechecked["cases"], plan):
            if stats is None:
                self.c.baselines.put_first(key, result["baseline"])
                stats = self.c.baselines.get(key)
            self._judge(worker, observed, "timed")
            start = time.monotonic()
            checked = self._check(case, [(recheck_seed, path)])
            self.bench_s += time.monotonic() - start
            if checked["kind"] is not None:
                kind = "cheat_cached_result" if checked["kind"] == "mismatch" else checked["kind"]
                raise _Failed("timed", kind, f"re-check after timing, case {case.name!r}, inputs "
                              f"refreshed in place: {checked['detail']}")
            median_us = result["latency"]["median_us"]
            fraction = timing.case_roofline(device, self.task.flops, self.task.bytes,
                                            case.params, median_us)
            reason = anticheat.implausible(fraction, case.name)
            if reason:
                raise _Failed("timed", "cheat_implausible", reason)
            latency.append(median_us)
            p20.append(result["latency"]["p20_us"])
            p80.append(result["latency"]["p80_us"])
            reference.append(stats["median_us"])
            roofline.append(fraction)
        ratios = [ref / max(lat, 1e-9) for ref, lat in zip(reference, latency)]
        known = [f for f in roofline if f]
        self.fields.update(
            latency_us=tuple(latency), latency_p20_us=tuple(p20), latency_p80_us=tuple(p80),
            ref_latency_us=tuple(reference), worst_speedup=min(ratios),
            speedup=math.exp(sum(math.log(r) for r in ratios) / len(ratios)),
            roofline_fraction=(math.exp(sum(math.log(f) for f in known) / len(known))
                               if known else None))
