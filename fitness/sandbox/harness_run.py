"""Runs an external suite's own harness on one kernel module, inside a sandboxed worker.

The worker's "harness" op delegates to `run`. The engine sends the files to write (the
kernel module, a candidate's or the suite's reference, and the suite's test code) and
what to do with them; the worker writes them into a folder of its private /sandbox and runs
the suite's way of exercising the module there. Nothing here judges: the harness's results
are written as raw tensor files (`fitness.processes.protocol.write_values`) plus a JSON
structure saying where each value sat, for the trusted side to compare. Nothing here times
either: the judge does (`fitness.judge.performance_inputs`). External test code may leave
the process altered (patched modules, salted seeds, imported test files), so the engine
retires the worker after one harness run.

The request's keys and the report's fields are listed in `run`'s docstring.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback

from fitness.processes import modules, protocol

_TRACE_CHARS = 6000

_GEAK_PERF_SHIM = '''"""Stand-in for geak_eval.perf.ROCm.performance_utils_pytest, written by KernelEvo's harness:
the correctness run deselects test_performance; the judge times it from a recording of its launches."""


def do_bench_config(warm_up=25, repetition=100, **_):
    return {"warmup": warm_up, "rep": repetition}


class PytestBenchmarker:
    def __init__(self, op_callable, op_name, config=None, **_):
        self.op_callable, self.op_name = op_callable, op_name

    def run_benchmark(self, current_params_dict=None, gbps_calculator=None, tflops_calculator=None, **_):
        raise RuntimeError("performance tests are timed by the judge, not run in the sandbox")


def save_all_benchmark_results(output_directory):
    pass
'''

def run(request: dict, device, launches) -> dict:
    """Returns the report of one harness run on `device`; `launches` is the worker's Triton
    launch counter. Whatever the harness raises is reported, never raised.

    Request keys: dir (folder to write into, in the worker's directory), files (name ->
    text), suite (tritonbench-revised | rocm | kernelbench), module (the kernel module's
    stem), entry (KernelBench's Model or ModelNew), seed (None keeps the harness's seeds; an
    int salts each seed it sets), trials (KernelBench), one_config (a reference's run: every
    autotuner held to one config that compiles, `LaunchCounter.one_config`). The report: phase reached (import |
    run | done), error, Triton launches, pytest outcomes, and the outputs' specs and
    structure. Timing is the judge's (`fitness.judge.performance_inputs`), never done here."""
    workdir = os.path.abspath(request["dir"])
    os.makedirs(workdir, exist_ok=True)
    for name, text in request["files"].items():
        with open(os.path.join(workdir, name), "w") as handle:
            handle.write(text)
    sys.path.insert(0, workdir)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    harness = _Harness(request, workdir, device)
    launches.count = 0
    launches.one_config = bool(request.get("one_config"))
    try:
        _salt_seeds(request["seed"])
        harness.report.update(_write_outputs(workdir, _RUNNERS[request["suite"]](harness)))
        harness.report["phase"] = "done"
    except BaseException as error:  # the report must say what happened, whatever it was
        harness.report["error"] = _error_info(error)
    harness.report["launches"] = launches.count
    return harness.report


class _Harness:
    """One run's request, folder, device and report (what the suite functions share)."""

    def __init__(self, request: dict, workdir: str, device):
        self.request, self.workdir, self.device = request, workdir, device
        self.report = {"ok": True, "phase": "import", "error": None, "tests": []}

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)


def _error_info(error: BaseException, trace: str = "") -> dict:
    return {"type": type(error).__name__, "module": type(error).__module__,
            "message": str(error)[:_TRACE_CHARS],
            "trace": (trace or "".join(traceback.format_exception(error)))[-_TRACE_CHARS:]}


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


# --- outputs as raw tensor files ----------------------------------------------------------

def _write_outputs(workdir: str, result) -> dict:
    """Writes the harness's result as raw files; returns {"outputs": specs, "structure"}.

    The structure is the result's containers as JSON, with {"leaf": i} where the i-th
    written tensor sat ({"leaf": i, "dtype": d} when a dtype the protocol lacks crossed
    as float64) and {"value": v} for strings and None. Numbers cross as 0-d tensors
    (float64, int64, bool), so the comparison treats them like any output.
    """
    leaves: list = []
    cases = result if isinstance(result, dict) else {"result": result}
    structure = {str(name): _flatten(value, leaves) for name, value in cases.items()}
    return {"outputs": protocol.write_values(workdir, "out", leaves), "structure": structure}


def _flatten(value, leaves: list) -> dict:
    import numpy
    import torch

    if isinstance(value, numpy.ndarray):
        value = torch.from_numpy(numpy.ascontiguousarray(value))
    elif isinstance(value, numpy.generic):
        value = value.item()
    if isinstance(value, (bool, int, float)):
        try:
            value = torch.tensor(value, dtype=torch.float64 if isinstance(value, float) else None)
        except (OverflowError, RuntimeError):  # an int beyond int64
            return {"value": repr(value)}
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        leaf = {"leaf": len(leaves)}
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype not in protocol.DTYPES:  # fp8, complex, ...: exact in float64 (complex as pairs)
            tensor = (torch.view_as_real(tensor) if tensor.is_complex() else tensor).to(torch.float64)
            leaf["dtype"] = dtype
        leaves.append(tensor)
        return leaf
    if isinstance(value, dict):
        return {"dict": {str(key): _flatten(item, leaves) for key, item in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"list": [_flatten(item, leaves) for item in value]}
    if value is None or isinstance(value, str):
        return {"value": value}
    if isinstance(value, torch.dtype):
        return {"value": str(value)}
    return {"value": f"<{type(value).__name__}>"}


# --- the suites' ways of running a module -------------------------------------------------

def _run_tritonbench(harness: _Harness):
    request = harness.request
    module = modules.import_file(harness.path(f"{request['module']}.py"), request["module"])
    harness.report["phase"] = "run"
    _seed(42)  # GEAK-eval seeds once before running the file; salted when the seed is set
    tests_path = harness.path("harness_tests.py")
    namespace = module.__dict__
    with open(tests_path) as handle:
        exec(compile(handle.read(), tests_path, "exec"), namespace)
    if namespace.get("result_gold") is None:  # a file that only sets result_gold under __main__
        tests = [name for name in namespace if name.startswith("test_") and callable(namespace[name])]
        if len(tests) != 1:
            raise RuntimeError(f"the test code set no result_gold and has {len(tests)} test_* functions")
        namespace["result_gold"] = namespace[tests[0]]()
    return namespace["result_gold"]


class _PytestRecorder:
    """Pytest plugin: seeds before each test, records outcomes and the module's result_gold."""

    def __init__(self, report: dict, seed: int):
        self.report, self.seed, self.result_gold = report, seed, None

    def pytest_runtest_setup(self, item):
        _seed(self.seed)

    def pytest_collectreport(self, report):
        if report.failed:
            self.report["collect_error"] = str(report.longrepr)[-_TRACE_CHARS:]

    def pytest_runtest_makereport(self, item, call):
        outcome = "passed" if call.excinfo is None else (
            "skipped" if call.excinfo.typename == "Skipped" else "failed")
        if call.when == "call" or outcome == "failed":
            entry = {"name": item.name, "file": item.path.name, "when": call.when, "outcome": outcome}
            if outcome == "failed":
                entry["error"] = _error_info(call.excinfo.value, str(call.excinfo.getrepr(style="short")))
            self.report["tests"].append(entry)

    def pytest_sessionfinish(self, session):
        for item in getattr(session, "items", []):
            module = getattr(item, "module", None)
            if module is not None and isinstance(getattr(module, "result_gold", None), dict):
                self.result_gold = module.result_gold
                return


def _geak_shim(workdir: str):
    """Writes the geak_eval stand-in (ROCm's performance module) into the working directory
    and returns ROCm's imported."""
    shim = os.path.join(workdir, "geak_eval", "perf", "ROCm")
    if not os.path.isdir(shim):
        os.makedirs(shim)
        for folder in ("geak_eval", "geak_eval/perf", "geak_eval/perf/ROCm"):
            open(os.path.join(workdir, folder, "__init__.py"), "w").close()
        with open(os.path.join(shim, "performance_utils_pytest.py"), "w") as handle:
            handle.write(_GEAK_PERF_SHIM)
        with open(os.path.join(workdir, "pytest.ini"), "w") as handle:
            handle.write("[pytest]\n")
    return importlib.import_module("geak_eval.perf.ROCm.performance_utils_pytest")


def _pytest(harness: _Harness, selection: str, plugins: list) -> None:
    """Runs pytest on the kernel's test file beside the geak_eval stand-in."""
    import pytest

    _geak_shim(harness.workdir)
    pytest.main([harness.path(f"{harness.request['module']}.py"), "-q", "-x", "-p", "no:cacheprovider",
                 f"--confcutdir={harness.workdir}", f"--rootdir={harness.workdir}", "-k", selection],
                plugins=plugins)


def _run_rocm(harness: _Harness):
    recorder = _PytestRecorder(harness.report, seed=42)
    harness.report["phase"] = "run"
    _pytest(harness, "not test_performance and not test_save_performance_results", [recorder])
    if "collect_error" in harness.report:
        harness.report["phase"] = "import"
    result = dict(recorder.result_gold or {})
    result.pop("_CALL_SUCCESS_", None)
    return result


def _kernelbench_models(harness: _Harness):
    """Returns (problem module, the model KernelBench builds after its fixed seed)."""
    request = harness.request
    problem = modules.import_file(harness.path("problem.py"), "problem")
    owner = problem if request["entry"] == "Model" else modules.import_file(
        harness.path(f"{request['module']}.py"), request["module"])
    model_class = getattr(owner, request["entry"])
    harness.report["phase"] = "run"
    _seed(42)
    init_inputs = problem.get_init_inputs()
    _seed(42)
    return problem, model_class(*init_inputs).to(harness.device.torch_device)


def _kernelbench_trials(harness: _Harness, problem):
    """Yields (trial name, inputs on the device), each trial's inputs from its own seed."""
    import torch

    for trial in range(harness.request["trials"]):
        _seed(1000 + trial)
        yield f"trial {trial}", [x.to(harness.device.torch_device) if isinstance(x, torch.Tensor) else x
                                 for x in problem.get_inputs()]


def _run_kernelbench(harness: _Harness):
    import torch

    problem, model = _kernelbench_models(harness)
    with torch.no_grad():
        return {name: model(*inputs) for name, inputs in _kernelbench_trials(harness, problem)}


_RUNNERS = {"tritonbench-revised": _run_tritonbench, "rocm": _run_rocm, "kernelbench": _run_kernelbench}
