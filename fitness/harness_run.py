"""Runs an external suite's own harness on one kernel module: the process the candidate runs in.

Started by `fitness.harness` as `python -I harness_run.py SPEC.json` in a fresh directory with
a scrubbed environment; its outputs pass imports nothing from the engine. It
never judges correctness: it saves the harness's outputs (`torch.save`, plain containers of
CPU tensors and numbers) for a checker process the candidate never touches, and writes a
JSON report of how far it got (phase, error, Triton launch count, pytest outcomes).

SPEC keys: suite (tritonbench-revised | rocm | kernelbench), module (file stem of the kernel
module in the working directory), entry (class KernelBench builds: Model or ModelNew), seed
(None keeps the harness's own seeds; an int salts every seed the harness sets, so a run sees
inputs no earlier run saw), trials (KernelBench), device (torch device), outputs, report.

With mode "time" (the timing pass, run only for a candidate whose outputs passed) nothing
is saved: the candidate is timed through `fitness.timing` (imported from engine_root before
any kernel module, the one exception to "imports nothing from the engine") on `backend`, and
the report's `timings` maps each case to [candidate stats, reference stats]; the reference
(ROCm: module `reference_module` beside the candidate's; KernelBench: `Model`) is timed
interleaved with the candidate only when `reference_module` is set (its cache missed).
ROCm cases are the `test_performance` parametrizations, KernelBench cases the trials.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import traceback

_REPORT: dict = {"phase": "start", "error": None, "launches": 0, "tests": []}
_TRACE_CHARS = 6000

_GEAK_PERF_SHIM = '''"""Stand-in for geak_eval.perf.ROCm.performance_utils_pytest, written by KernelEvo's harness:
hands op_callable to TIMER, which the timing pass sets to fitness.timing (never do_bench)."""
TIMER = None


def do_bench_config(warm_up=25, repetition=100, **_):
    return {"warmup": warm_up, "rep": repetition}


class PytestBenchmarker:
    def __init__(self, op_callable, op_name, config=None, **_):
        self.op_callable, self.op_name = op_callable, op_name

    def run_benchmark(self, current_params_dict=None, gbps_calculator=None, tflops_calculator=None, **_):
        if TIMER is None:
            raise RuntimeError("performance tests run only in KernelEvo's timing pass")
        return TIMER(self.op_callable)


def save_all_benchmark_results(output_directory):
    pass
'''


def _save_report(spec: dict) -> None:
    pathlib.Path(spec["report"]).write_text(json.dumps(_REPORT, default=str))


def _error_info(error: BaseException, trace: str = "") -> dict:
    return {"type": type(error).__name__, "module": type(error).__module__,
            "message": str(error)[:_TRACE_CHARS],
            "trace": (trace or "".join(traceback.format_exception(error)))[-_TRACE_CHARS:]}


def _count_launches() -> None:
    """Counts Triton kernel launches (compiled and interpreted) into the report."""
    from triton.runtime import jit

    classes = [jit.JITFunction]
    try:
        from triton.runtime import interpreter
        classes.append(interpreter.InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            _REPORT["launches"] += 1
            return _original(self, *args, **kwargs)

        cls.run = run


def _salt_seeds(salt: int | None) -> None:
    """Maps every seed the harness sets to a salted one, the same way in every process."""
    if salt is None:
        return
    import random

    import numpy
    import torch

    def salted(value):
        return None if value is None else (int(value) * 1_000_003 + salt) % (2**31 - 1)

    for owner, name in ((random, "seed"), (numpy.random, "seed"), (torch, "manual_seed"),
                        (torch.cuda, "manual_seed"), (torch.cuda, "manual_seed_all")):
        original = getattr(owner, name)
        setattr(owner, name, lambda value=None, *rest, _original=original: _original(salted(value), *rest))


def _seed(value: int) -> None:
    import random

    import numpy
    import torch

    random.seed(value)
    numpy.random.seed(value)
    torch.manual_seed(value)


def _import_file(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _plain(value):
    """Returns `value` as containers of CPU tensors and numbers (what weights_only loads)."""
    import numpy
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone().contiguous()
    if isinstance(value, numpy.ndarray):
        return torch.from_numpy(numpy.ascontiguousarray(value)).clone()
    if isinstance(value, numpy.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return str(value)
    return f"<{type(value).__name__}>"


def _run_tritonbench(spec: dict, workdir: pathlib.Path):
    module = _import_file(workdir / f"{spec['module']}.py", spec["module"])
    _REPORT["phase"] = "run"
    _seed(42)  # GEAK-eval seeds once before running the file; salted when spec["seed"] is set
    tests_path = workdir / "harness_tests.py"
    namespace = module.__dict__
    exec(compile(tests_path.read_text(), str(tests_path), "exec"), namespace)
    if namespace.get("result_gold") is None:  # a file that only sets result_gold under __main__
        tests = [name for name in namespace if name.startswith("test_") and callable(namespace[name])]
        if len(tests) != 1:
            raise RuntimeError(f"the test code set no result_gold and has {len(tests)} test_* functions")
        namespace["result_gold"] = namespace[tests[0]]()
    return namespace["result_gold"]


class _PytestRecorder:
    """Pytest plugin: seeds before each test, records outcomes and the module's result_gold."""

    def __init__(self, seed: int):
        self.seed, self.result_gold = seed, None

    def pytest_runtest_setup(self, item):
        _seed(self.seed)

    def pytest_collectreport(self, report):
        if report.failed:
            _REPORT["collect_error"] = str(report.longrepr)[-_TRACE_CHARS:]

    def pytest_runtest_makereport(self, item, call):
        outcome = "passed" if call.excinfo is None else (
            "skipped" if call.excinfo.typename == "Skipped" else "failed")
        if call.when == "call" or outcome == "failed":
            entry = {"name": item.name, "file": item.path.name, "when": call.when, "outcome": outcome}
            if outcome == "failed":
                entry["error"] = _error_info(call.excinfo.value, str(call.excinfo.getrepr(style="short")))
            _REPORT["tests"].append(entry)

    def pytest_sessionfinish(self, session):
        for item in getattr(session, "items", []):
            module = getattr(item, "module", None)
            if module is not None and isinstance(getattr(module, "result_gold", None), dict):
                self.result_gold = module.result_gold
                return


def _geak_shim(workdir: pathlib.Path):
    """Writes the geak_eval stand-in into the working directory and returns it imported."""
    shim = workdir / "geak_eval" / "perf" / "ROCm"
    if not shim.is_dir():
        shim.mkdir(parents=True)
        for folder in (workdir / "geak_eval", workdir / "geak_eval" / "perf", shim):
            (folder / "__init__.py").write_text("")
        (shim / "performance_utils_pytest.py").write_text(_GEAK_PERF_SHIM)
        (workdir / "pytest.ini").write_text("[pytest]\n")
    return importlib.import_module("geak_eval.perf.ROCm.performance_utils_pytest")


def _pytest(workdir: pathlib.Path, files: list[str], selection: str, plugins: list) -> None:
    """Runs pytest on `files` of the working directory beside the geak_eval stand-in."""
    import pytest

    _geak_shim(workdir)
    pytest.main([str(workdir / name) for name in files] + [
        "-q", "-x", "-p", "no:cacheprovider", f"--confcutdir={workdir}", f"--rootdir={workdir}",
        "-k", selection], plugins=plugins)


def _run_rocm(spec: dict, workdir: pathlib.Path):
    recorder = _PytestRecorder(seed=42)
    _REPORT["phase"] = "run"
    _pytest(workdir, [f"{spec['module']}.py"], "not test_performance and not test_save_performance_results",
            [recorder])
    if "collect_error" in _REPORT:
        _REPORT["phase"] = "import"
    result = dict(recorder.result_gold or {})
    result.pop("_CALL_SUCCESS_", None)
    return result


def _run_kernelbench(spec: dict, workdir: pathlib.Path):
    import torch

    problem = _import_file(workdir / "problem.py", "problem")
    owner = problem if spec["entry"] == "Model" else _import_file(workdir / f"{spec['module']}.py", spec["module"])
    model_class = getattr(owner, spec["entry"])
    _REPORT["phase"] = "run"
    _seed(42)
    init_inputs = problem.get_init_inputs()
    _seed(42)
    model = model_class(*init_inputs).to(spec["device"])
    outputs = {}
    with torch.no_grad():
        for trial in range(spec["trials"]):
            _seed(1000 + trial)
            inputs = [x.to(spec["device"]) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
            outputs[f"trial {trial}"] = model(*inputs)
    return outputs


_SUITES = {"tritonbench-revised": _run_tritonbench, "rocm": _run_rocm, "kernelbench": _run_kernelbench}


class _PerfTimer:
    """Pytest plugin of the ROCm timing pass: runs each `test_performance` case of the
    reference module right before the candidate's, and times the two op_callables
    interleaved when the candidate's arrives (the candidate's alone when no reference runs)."""

    def __init__(self, bench, reference_file: str | None):
        self.bench, self.reference_file = bench, reference_file
        self.current = None
        self.pending: dict = {}
        self.cases: dict = {}

    def pytest_collection_modifyitems(self, items):
        first = {}
        for index, item in enumerate(items):
            first.setdefault(item.name, index)
        items.sort(key=lambda item: (first[item.name], item.path.name != self.reference_file))

    def pytest_runtest_setup(self, item):
        self.current = item

    def time(self, op_callable) -> float:
        """Returns the op's median in ms (the shim's contract); records the case's stats."""
        name = self.current.name
        if self.current.path.name == self.reference_file:
            self.pending[name] = op_callable
            return 0.0
        reference = self.pending.pop(name, None)
        stats = self.bench([op_callable] + ([reference] if reference is not None else []))
        self.cases[name] = [vars(item) for item in stats]
        return stats[0].median_us / 1e3


def _time_rocm(spec: dict, workdir: pathlib.Path, bench) -> dict:
    timer = _PerfTimer(bench, f"{spec['reference_module']}.py" if spec.get("reference_module") else None)
    _geak_shim(workdir).TIMER = timer.time
    files = [f"{spec['module']}.py"] + ([timer.reference_file] if timer.reference_file else [])
    _REPORT["phase"] = "time"
    _pytest(workdir, files, "test_performance and not test_save_performance_results",
            [_PytestRecorder(seed=42), timer])
    return timer.cases


def _time_kernelbench(spec: dict, workdir: pathlib.Path, bench) -> dict:
    """Times ModelNew (and Model when asked, interleaved) on each trial's inputs."""
    import torch

    problem = _import_file(workdir / "problem.py", "problem")
    classes = [getattr(_import_file(workdir / f"{spec['module']}.py", spec["module"]), spec["entry"])]
    if spec.get("reference_module"):
        classes.append(problem.Model)
    _REPORT["phase"] = "time"
    _seed(42)
    init_inputs = problem.get_init_inputs()
    models = []
    for model_class in classes:
        _seed(42)
        models.append(model_class(*init_inputs).to(spec["device"]))
    cases = {}
    with torch.no_grad():
        for trial in range(spec["trials"]):
            _seed(1000 + trial)
            inputs = [x.to(spec["device"]) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
            stats = bench([lambda model=model: model(*inputs) for model in models])
            cases[f"trial {trial}"] = [vars(item) for item in stats]
    return cases


_TIMERS = {"rocm": _time_rocm, "kernelbench": _time_kernelbench}


def _timing_bench(spec: dict):
    """Returns bench(fns) -> [LatencyStats] from fitness.timing, the engine's one timer:
    imported (clocks bound) before any kernel module, like the cascade's workers do."""
    sys.path.append(spec["engine_root"])
    from fitness import device, timing

    timing.bind_clocks()
    info = device.detect(spec["backend"])
    return lambda fns: timing.bench(fns, info)


def main(spec_path: str) -> int:
    spec = json.loads(pathlib.Path(spec_path).read_text())
    workdir = pathlib.Path(spec_path).parent
    sys.path.insert(0, str(workdir))
    _save_report(spec)
    try:
        import torch

        bench = _timing_bench(spec) if spec.get("mode") == "time" else None
        _salt_seeds(spec.get("seed"))
        _count_launches()
        _REPORT["phase"] = "import"
        _save_report(spec)
        if bench is None:
            torch.save(_plain(_SUITES[spec["suite"]](spec, workdir)), spec["outputs"])
        else:
            _REPORT["timings"] = _TIMERS[spec["suite"]](spec, workdir, bench)
        _REPORT["phase"] = "done"
    except BaseException as error:  # the report must say what happened, whatever it was
        _REPORT["error"] = _error_info(error)
    _save_report(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
