"""Scores a candidate of an external-suite task by running the suite's own harness.

Three processes per verdict, so no candidate can touch the judgement:
  1. the candidate's process (`harness_run.py`): the candidate module plus the suite's test
     code, in a fresh directory, scrubbed environment, own process group, time limit that
     kills the group, bounded output; it saves the harness's outputs;
  2. the reference's process: the same with the task's reference kernel (KernelBench: the
     PyTorch `Model`), once per (task, backend, input seed), cached;
  3. the checker's process (`harness_check.py`): loads both output files with
     `weights_only=True` and compares them with the suite's tolerance.
Every seed the harness sets is salted with this runner's `input_seed` (drawn at random
unless given), so candidates meet inputs no published expected output covers.

A candidate whose outputs pass gets a fourth process, the timing pass (`harness_run.py`
again, mode "time"), where the suite gives a way to call the kernel: the ROCm benchmark's
`test_performance` op_callables and KernelBench's `Model`/`ModelNew` on `get_inputs()`.
It times through `fitness.timing`, the reference interleaved with the candidate whenever the
reference's latency of a case is not cached yet (per task, case, device, harness version),
and is the only run that holds the GPU exclusively. TritonBench-revised has no timing
harness: its correct candidates end at stage "correct", untimed, with the reason as
`error_trace`.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import math
import time

from evo.records import Candidate, Evaluation, Task
from fitness.judge.cascade import BaselineCache
from fitness.pool import SECRET_MARKERS, kill_group

HARNESS_VERSION = "external-harness-2"
_HERE = pathlib.Path(__file__).resolve().parent
_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "ROCM_PATH", "OMP_NUM_THREADS")
_ENV_KEPT_PREFIXES = ("CUDA_VISIBLE", "HIP_VISIBLE", "ROCR_VISIBLE", "HSA_", "NVIDIA_")
_TAIL_BYTES = 16 << 10


@dataclasses.dataclass(frozen=True)
class Limits:
    """Attributes:
      run_s: wall-clock limit of one candidate's harness run, in seconds.
      reference_s: the same for the reference's run, which happens once per task and may
        autotune every config.
      check_s: wall-clock limit of the output comparison, in seconds.
      time_s: wall-clock limit of a correct candidate's timing pass, in seconds.
      output_bytes: stdout+stderr a run may print before it is killed as a flood.
    """

    run_s: float = 300.0
    reference_s: float = 900.0
    check_s: float = 120.0
    time_s: float = 300.0
    output_bytes: int = 32 << 20


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What one sandboxed process did: exit status, limits hit, output tail, wall time."""

    returncode: int | None
    timed_out: bool
    flooded: bool
    tail: str
    wall_s: float


class HarnessError(RuntimeError):
    """The task's own reference failed its harness: the task, not the candidate, is broken."""


def scrubbed_env(backend: str, home: pathlib.Path, triton_cache: pathlib.Path) -> dict[str, str]:
    """Returns the environment of a sandboxed run: what torch and Triton need, no secrets."""
    env = {name: value for name, value in os.environ.items()
           if (name in _ENV_KEPT or name.startswith(_ENV_KEPT_PREFIXES))
           and not any(marker in name.upper() for marker in SECRET_MARKERS)}
    env.update(HOME=str(home), TMPDIR=str(home), TRITON_CACHE_DIR=str(triton_cache),
               PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    return env


def run_sandboxed(argv: list[str], cwd: pathlib.Path, env: dict[str, str], limit_s: float,
                  output_bytes: int) -> RunResult:
    """Runs argv in its own process group; kills the group at the time or output limit."""
    start = time.monotonic()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    tail, total, flooded = bytearray(), [0], threading.Event()

    def drain():
        while chunk := process.stdout.read1(1 << 16):
            total[0] += len(chunk)
            tail.extend(chunk)
            del tail[:-_TAIL_BYTES]
            if total[0] > output_bytes and not flooded.is_set():
                flooded.set()
                kill_group(process.pid)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process.wait(timeout=limit_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    kill_group(process.pid)  # also reaps anything the run left behind in its group
    process.wait()
    reader.join(timeout=5.0)
    return RunResult(process.returncode, timed_out, flooded.is_set(),
                     tail.decode(errors="replace"), time.monotonic() - start)


def defines(source: str, name: str) -> bool:
    """Returns whether a module's top level binds `name` (def, class, assignment, import)."""
    for node in ast.parse(source).body:
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
    if error.get("module", "").startswith("triton") and "Compil" in error.get("type", ""):
        return "compile_error"
    if phase == "import" or error.get("type") in ("ImportError", "ModuleNotFoundError"):
        return "import_error"
    if error.get("type") == "AssertionError":
        return "mismatch"  # the harness's own in-process check failed
    return "runtime_error"


def classify_run(run: RunResult, report: dict | None, require_launch: bool) -> tuple[str, str | None, str]:
    """Returns (stage reached, failure kind or None, error text) of one harness run."""
    phase = (report or {}).get("phase", "import")
    stage = "import" if phase in ("start", "import") else "run"
    if run.timed_out:
        return stage, "timeout", f"killed after the {run.wall_s:.0f} s limit\n{run.tail[-2000:]}"
    if run.flooded:
        return stage, "output_flood", f"printed more than the output limit\n{run.tail[-2000:]}"
    if report is None or (phase != "done" and not report.get("error")):
        kind = "illegal_memory_access" if "illegal memory access" in run.tail.lower() else "worker_crash"
        return stage, kind, f"the process died (exit status {run.returncode})\n{run.tail[-4000:]}"
    if report.get("collect_error"):
        return "import", "import_error", report["collect_error"]
    failed = [test for test in report.get("tests", []) if test["outcome"] == "failed"]
    if report.get("error") or failed:
        error = report.get("error") or failed[0]["error"]
        where = f"test {failed[0]['name']}: " if failed and not report.get("error") else ""
        return stage, _error_kind(error, phase), where + error.get("trace", error.get("message", ""))
    if not report.get("tests") and report.get("suite") == "rocm":
        return stage, "harness_error", "pytest ran no correctness test"
    if require_launch and not report.get("launches"):
        return "run", "no_triton_launch", "the harness ran without launching any Triton kernel"
    return "run", None, ""


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


def speedup_fields(latency: list[dict], reference: list[dict], backend: str) -> dict:
    """Returns the Evaluation's timing fields from per-case candidate and reference stats."""
    ratios = [ref["median_us"] / max(lat["median_us"], 1e-9) for lat, ref in zip(latency, reference)]
    return dict(latency_us=tuple(s["median_us"] for s in latency),
                latency_p20_us=tuple(s["p20_us"] for s in latency),
                latency_p80_us=tuple(s["p80_us"] for s in latency),
                ref_latency_us=tuple(s["median_us"] for s in reference),
                speedup=math.exp(sum(map(math.log, ratios)) / len(ratios)), worst_speedup=min(ratios),
                timing_meaningful=backend != "interpreter")


class HarnessRunner:
    """Scores candidates of harness tasks on one backend; thread-safe.

    The reference outputs of a task are computed once per (task, backend, input seed) and
    kept in this process's memory: they reach the disk only inside a checker's fresh
    directory, for the length of one comparison, so a running candidate finds no expected
    outputs lying beside it to copy.
    """

    def __init__(self, backend: str, device_name: str = "", limits: Limits = Limits(),
                 input_seed: int | None = None, salt_seeds: bool = True, require_triton_launch: bool = True):
        """`input_seed` salts the harness's seeds (drawn at random when None); with
        `salt_seeds=False` the harness keeps its own seeds, as the suite publishes it."""
        self.backend = backend
        self.device_name = device_name or backend
        self.limits = limits
        if not salt_seeds:
            self.input_seed = None
        else:
            self.input_seed = random.SystemRandom().randrange(1, 2**30) if input_seed is None else input_seed
        self.require_triton_launch = require_triton_launch
        self._root_dir: pathlib.Path | None = None  # made on first use: most Evaluators never need it
        self._references: dict[str, bytes | HarnessError] = {}  # a broken reference fails once
        self._lock = threading.Lock()
        self._task_locks: dict[str, threading.Lock] = {}
        self._baselines = BaselineCache()
        self._timed_cases: dict[str, tuple[str, ...]] = {}  # task key -> its timed case names
        self._device_lock = threading.Lock()  # timing passes hold the GPU one at a time

    @property
    def _root(self) -> pathlib.Path:
        with self._lock:
            if self._root_dir is None:
                self._root_dir = pathlib.Path(tempfile.mkdtemp(prefix="kevo-harness-"))
            return self._root_dir

    def close(self) -> None:
        if self._root_dir is not None:
            shutil.rmtree(self._root_dir, ignore_errors=True)

    def evaluate(self, task: Task, candidate: Candidate) -> Evaluation:
        """Returns the verdict of the task's own harness on the candidate."""
        verdict = dict(candidate_id=candidate.id, device=self.device_name, backend=self.backend,
                       harness_version=HARNESS_VERSION, call_ok=False, correct=False)
        if self.backend not in task.runnable_on:
            return Evaluation(stage_reached="syntax", failure_kind="unsupported_on_backend",
                              error_trace=task.skip_reason or f"not runnable on {self.backend}", **verdict)
        try:
            has_entry = defines(candidate.source, task.entry_point)
        except (SyntaxError, ValueError) as error:
            return Evaluation(stage_reached="syntax", failure_kind="syntax_error", error_trace=str(error), **verdict)
        if not has_entry:
            return Evaluation(stage_reached="import", failure_kind="missing_entry_point",
                              error_trace=f"the module does not define {task.entry_point!r}", **verdict)
        try:
            expected = self.reference_outputs(task)
        except HarnessError as error:
            return Evaluation(stage_reached="import", failure_kind="harness_error", error_trace=str(error), **verdict)
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="run-", dir=self._root))
        try:
            run, report = self._run(task, candidate.source, "ModelNew", workdir, "candidates", self.limits.run_s)
            stage, kind, trace = classify_run(run, report, self.require_triton_launch)
            if kind is not None:
                return Evaluation(stage_reached=stage, failure_kind=kind, error_trace=trace[-6000:],
                                  check_s=run.wall_s, **verdict)
            check = self._check(task, expected, workdir / "outputs.pt")
            checked = dict(stage_reached="correct",  # entered; `correct` says whether it passed
                           failure_kind=check["kind"], error_trace=check["message"],
                           case_names=tuple(case["name"] for case in check["cases"]),
                           max_abs_err=tuple(float(case["max_abs_err"]) for case in check["cases"]),
                           check_s=run.wall_s, **{**verdict, "call_ok": True, "correct": bool(check["ok"])})
            if check["ok"]:
                checked.update(self._time(task, candidate.source))
            return Evaluation(**checked)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _time(self, task: Task, source: str) -> dict:
        """Returns the Evaluation fields of a correct candidate's timing pass: latencies and
        speedup at stage "timed", a failure at stage "timed", or the reason it is untimed."""
        reason = untimed_reason(task)
        if reason:
            return {"error_trace": reason}
        key = f"{task.suite}:{task.name}"
        cache_keys = lambda names: [(key, name, self.device_name, HARNESS_VERSION) for name in names]
        known = self._timed_cases.get(key)
        cached = [self._baselines.get(k) for k in cache_keys(known)] if known else [None]
        time_reference = any(stats is None for stats in cached)
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="time-", dir=self._root))
        try:
            lock = self._device_lock if self.backend != "interpreter" else contextlib.nullcontext()
            with lock:
                run, report = self._run(task, source, "ModelNew", workdir, "candidates", self.limits.time_s,
                                        mode="time", time_reference=time_reference)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        _, kind, trace = classify_run(run, report, self.require_triton_launch)
        if kind is None and any(test["outcome"] == "failed" and test.get("file", "").startswith("ref_")
                                for test in report.get("tests", [])):
            kind, trace = "harness_error", "the reference's test_performance failed"
        timings = (report or {}).get("timings") or {}
        if kind is None and not timings:
            kind, trace = "harness_error", "the timing pass timed no case"
        if kind is not None:
            return dict(stage_reached="timed", failure_kind=kind, correct=False, bench_s=run.wall_s,
                        error_trace=f"timing pass: {trace}"[-6000:])
        names = tuple(timings)
        if time_reference:
            self._timed_cases.setdefault(key, names)
            for cache_key, name in zip(cache_keys(names), names):
                if len(timings[name]) > 1:
                    self._baselines.put_first(cache_key, timings[name][1])
        reference = [self._baselines.get(k) for k in cache_keys(names)]
        if any(stats is None for stats in reference):
            return dict(stage_reached="timed", failure_kind="harness_error", correct=False, bench_s=run.wall_s,
                        error_trace=f"timing pass: cases {list(names)} differ from the reference's "
                                    f"{list(self._timed_cases[key])}")
        return dict(stage_reached="timed", bench_s=run.wall_s, **speedup_fields(
            [timings[name][0] for name in names], reference, self.backend))

    def reference_outputs(self, task: Task) -> bytes:
        """Returns the reference's saved outputs; raises HarnessError if the reference fails
        (the reference passing its own harness is exactly this call succeeding)."""
        key = f"{task.suite}:{task.name}"
        with self._lock:
            task_lock = self._task_locks.setdefault(key, threading.Lock())
        with task_lock:
            if key not in self._references:
                workdir = pathlib.Path(tempfile.mkdtemp(prefix="ref-", dir=self._root))
                try:
                    run, report = self._run(task, task.baseline_source, "Model", workdir, "reference",
                                            self.limits.reference_s)
                    stage, kind, trace = classify_run(run, report, require_launch=False)
                    if kind is None and not (workdir / "outputs.pt").is_file():
                        stage, kind, trace = "run", "runtime_error", "no outputs saved"
                    self._references[key] = (workdir / "outputs.pt").read_bytes() if kind is None else HarnessError(
                        f"the reference of {task.name!r} failed its own harness on {self.backend} "
                        f"({kind} at stage {stage}):\n{trace[-4000:]}")
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)
            outcome = self._references[key]
        if isinstance(outcome, HarnessError):
            raise outcome
        return outcome

    def _run(self, task: Task, source: str, kernelbench_entry: str, workdir: pathlib.Path,
             cache: str, limit_s: float, mode: str = "outputs",
             time_reference: bool = False) -> tuple[RunResult, dict | None]:
        """Writes the module and harness into workdir and runs the harness on them (mode
        "time": the timing pass, with the reference beside the candidate when asked)."""
        module = "kernel" if task.suite != "rocm" else f"test_{task.name.replace('.', '_')}"
        reference_module = f"ref_{module}" if time_reference else None
        if task.suite == "rocm":
            (workdir / f"{module}.py").write_text(f"{source.rstrip()}\n\n\n{'#' * 146}\n\n{task.harness}")
            if reference_module:
                (workdir / f"{reference_module}.py").write_text(
                    f"{task.baseline_source.rstrip()}\n\n\n{'#' * 146}\n\n{task.harness}")
        elif task.suite == "kernelbench":
            (workdir / "problem.py").write_text(task.harness)
            (workdir / f"{module}.py").write_text(source)
        else:
            (workdir / f"{module}.py").write_text(source)
            (workdir / "harness_tests.py").write_text(task.harness)
        spec = {"suite": task.suite, "module": module, "seed": self.input_seed,
                "entry": kernelbench_entry if task.suite == "kernelbench" else task.entry_point,
                "trials": len(task.cases_for(self.backend)),
                "device": "cpu" if self.backend == "interpreter" else "cuda",
                "outputs": str(workdir / "outputs.pt"), "report": str(workdir / "report.json"),
                "mode": mode, "backend": self.backend, "reference_module": reference_module,
                "engine_root": str(_HERE.parent)}
        (workdir / "spec.json").write_text(json.dumps(spec))
        env = scrubbed_env(self.backend, workdir, self._root / f"triton-{cache}")
        run = run_sandboxed([sys.executable, "-I", str(_HERE / "harness_run.py"), str(workdir / "spec.json")],
                            workdir, env, limit_s, self.limits.output_bytes)
        report_path = workdir / "report.json"
        try:
            report = json.loads(report_path.read_text()) if report_path.is_file() else None
        except ValueError:
            report = None
        if report is not None:
            report["suite"] = task.suite
        return run, report

    def _check(self, task: Task, expected: bytes, actual: pathlib.Path) -> dict:
        """Returns the checker process's verdict on the candidate's outputs."""
        if not actual.is_file():
            return {"ok": False, "kind": "runtime_error", "message": "the harness saved no outputs", "cases": []}
        check_dir = pathlib.Path(tempfile.mkdtemp(prefix="check-", dir=self._root))
        report = check_dir / "check.json"
        spec = {"expected": str(check_dir / "expected.pt"), "actual": str(actual), "report": str(report),
                "tolerance": {dtype: list(pair) for dtype, pair in task.tolerance.items()}}
        try:
            (check_dir / "expected.pt").write_bytes(expected)
            (check_dir / "spec.json").write_text(json.dumps(spec))
            env = scrubbed_env("interpreter", check_dir, check_dir / "triton")
            run = run_sandboxed([sys.executable, "-I", str(_HERE / "harness_check.py"), str(check_dir / "spec.json")],
                                check_dir, env, self.limits.check_s, self.limits.output_bytes)
            if run.returncode != 0 or not report.is_file():
                return {"ok": False, "kind": "harness_error", "cases": [],
                        "message": f"the output checker failed (exit {run.returncode}):\n{run.tail[-3000:]}"}
            return json.loads(report.read_text())
        finally:
            shutil.rmtree(check_dir, ignore_errors=True)
