"""The child of external_recordable.py: records one task's timing calls with the kernel
module's functions replaced by recorders (that script's docstring says how). Reads the task's
spec as JSON on stdin; prints its row as `ROW {json}` after each phase (the last one counts)."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import tempfile
import time
import types

SEED, OTHER_SEED = 42, 43
SEED_CHECK_MAX_S = 5.0
"""A task whose first generation takes longer skips the two seed-check generations."""
DIGEST_ELEMENTS = 1 << 18
"""Elements of a tensor the fingerprint reads, spread evenly over it (all of a smaller one)."""


class Recorder:
    """Stands for a function or class of the kernel module: records each call, returns None.
    Subscripting (a jit kernel's `[grid]`) gives the recorder of the launch, an attribute
    (`.apply` of an autograd Function) the recorder of that attribute."""

    def __init__(self, name: str, kind: str, log: list):
        self.name, self.kind, self.log = name, kind, log

    def __call__(self, *args, **kwargs):
        self.log.append({"name": self.name, "kind": self.kind, "args": args, "kwargs": kwargs})

    def __getitem__(self, grid):
        return Recorder(f"{self.name}[grid]", "launch", self.log)

    def __getattr__(self, attribute):  # `Function.apply`, `kernel.run`: recorded by that name
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return Recorder(f"{self.name}.{attribute}", self.kind, self.log)


def describe(value, depth: int = 0):
    """A JSON description of an argument: tensors by type, shape, dtype and device."""
    import numpy
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                "device": str(value.device)}
    if isinstance(value, numpy.ndarray):
        return {"ndarray": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, (list, tuple)) and depth < 3:
        return [describe(item, depth + 1) for item in value[:16]] + (["..."] if len(value) > 16 else [])
    if isinstance(value, dict) and depth < 3:
        return {str(key): describe(item, depth + 1) for key, item in list(value.items())[:16]}
    if isinstance(value, (bool, int, float, str, type(None))) or isinstance(value, torch.dtype):
        return repr(value)[:80]
    return f"<{type(value).__name__}>"


def tensors(value, depth: int = 0):
    """Yields the tensors (and arrays) inside nested containers."""
    import numpy
    import torch

    if isinstance(value, (torch.Tensor, numpy.ndarray)):
        yield value
    elif isinstance(value, (list, tuple)) and depth < 4:
        for item in value:
            yield from tensors(item, depth + 1)
    elif isinstance(value, dict) and depth < 4:
        for item in value.values():
            yield from tensors(item, depth + 1)


def nbytes(values) -> int:
    """Bytes of the distinct tensors among `values`."""
    seen = {id(item): item for item in values}
    return int(sum(item.numel() * item.element_size() if hasattr(item, "element_size") else item.nbytes
                   for item in seen.values()))


def digest(value) -> str:
    """A hash of the values and structure of `value` (tensors by their bytes)."""
    import numpy
    import torch

    hasher = hashlib.blake2b(digest_size=12)

    def feed(item, depth=0):
        if isinstance(item, torch.Tensor):
            flat = item.detach().reshape(-1)
            flat = flat[::max(1, flat.numel() // DIGEST_ELEMENTS)].contiguous()  # a spread sample
            hasher.update(f"T{list(item.shape)}{item.dtype}".encode())
            try:
                hasher.update(flat.view(torch.uint8).numpy().tobytes())
            except (RuntimeError, TypeError):
                hasher.update(flat.to(torch.float64).numpy().tobytes())
        elif isinstance(item, numpy.ndarray):
            hasher.update(f"A{item.shape}{item.dtype}".encode() + numpy.ascontiguousarray(item).tobytes())
        elif isinstance(item, (list, tuple)) and depth < 6:
            hasher.update(b"[")
            for inner in item:
                feed(inner, depth + 1)
            hasher.update(b"]")
        elif isinstance(item, dict) and depth < 6:
            for key, inner in item.items():
                hasher.update(repr(key).encode())
                feed(inner, depth + 1)
        else:
            hasher.update(repr(item).encode()[:200])

    feed(value)
    return hasher.hexdigest()


def host_device():
    """Returns a torch function mode that makes on the host what the code asks for on "cuda"
    and makes `torch.empty*` zeros; its `named` counts the calls that named cuda."""
    import torch
    from torch.overrides import TorchFunctionMode

    def cuda(device) -> bool:
        return (isinstance(device, str) and device.startswith("cuda")) or (
            isinstance(device, torch.device) and device.type == "cuda") or (
            isinstance(device, int) and not isinstance(device, bool))

    zeros = {torch.empty: torch.zeros, torch.empty_like: torch.zeros_like,
             torch.Tensor.new_empty: torch.Tensor.new_zeros}

    class HostDevice(TorchFunctionMode):
        named = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                HostDevice.named += 1
                return args[0]
            if cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
                HostDevice.named += 1
            if func is torch.Tensor.to and any(cuda(arg) for arg in args[1:2]):
                args = (args[0], "cpu", *args[2:])
                HostDevice.named += 1
            return zeros.get(func, func)(*args, **kwargs)

    torch.Tensor.cuda = lambda tensor, *_, **__: tensor
    torch.cuda.synchronize = lambda *_, **__: None
    return HostDevice()


class Report:
    """The task's row, printed after each phase."""

    def __init__(self, spec: dict):
        self.row = {"phase": "import", "status": "failed", "entry_point": spec["entry_point"]}

    def emit(self) -> None:
        print("ROW " + json.dumps(self.row), flush=True)


def record_calls(log: list, start: int, entry_point: str) -> dict:
    """Returns one input's summary of the calls logged from `start` on."""
    calls = log[start:]
    return {"calls": len(calls), "names": [call["name"] for call in calls],
            "arg_bytes": nbytes([t for call in calls for t in tensors([call["args"], call["kwargs"]])]),
            "kinds": sorted({call["kind"] for call in calls})}


def classify(error: BaseException, recorded: int) -> str:
    """Why an op failed: the recorders' None used, or the code's own error."""
    text = f"{type(error).__name__}: {error}"
    if recorded and ("NoneType" in text or "None" in str(error)[:120]):
        return "uses the result of a recorded call"
    return f"raised {type(error).__name__}" + (" after a recorded call" if recorded else "")


def finish(row: dict, per_input: list, entry_point: str) -> None:
    """Sets the row's status and counts from its inputs' summaries."""
    row["inputs"] = len(per_input)
    row["calls_per_input"] = [item["calls"] for item in per_input]
    row["arg_bytes"] = [item["arg_bytes"] for item in per_input]
    names = sorted({name for item in per_input for name in item["names"]})
    row["entries"] = names
    row["entry_mismatch"] = bool(names) and names != [entry_point]
    row["class_calls"] = sorted({name for item in per_input if "class" in item["kinds"] for name in item["names"]})
    row["launches"] = [name for name in names if name.endswith("[grid]")]
    failures = [item for item in per_input if item.get("failure")]
    if failures:
        row["failure"] = failures[0]["failure"]
        row["error"] = failures[0]["error"]
        row["failed_inputs"] = len(failures)
        row["status"] = "uses the result" if row["failure"].startswith("uses") else "failed"
    elif not per_input:
        row["status"], row["failure"] = "failed", "no performance input"
    elif any(item["calls"] == 0 for item in per_input):
        row["status"], row["failure"] = "no call recorded", "an input's op called nothing of the module"
    elif all(item["calls"] == 1 for item in per_input) and len(names) == 1:
        row["status"] = "one entry call per input"
    else:
        row["status"] = "several calls"


def seed_check(row: dict, first: list, generate) -> None:
    """Sets deterministic / changes_with_seed from two more generations."""
    if row.get("generate_s", 0) > SEED_CHECK_MAX_S:
        row["seed_check"] = f"skipped: generation over {SEED_CHECK_MAX_S:.0f} s"
        return
    row["phase"] = "seed check"
    again = generate(SEED)
    row["deterministic"] = again == first
    other = generate(OTHER_SEED)
    changed = sum(a != b for a, b in zip(first, other)) + abs(len(first) - len(other))
    row["changes_with_seed"] = "all" if changed >= len(first) else ("some" if changed else "")


# --- TritonBench-revised ------------------------------------------------------------------

def tritonbench(spec: dict, report: Report, workdir: str) -> None:
    import importlib.util

    from benchmarks.external import recorded
    from fitness.sandbox import harness_run

    row, log = report.row, []
    recorded.stand_in_geak_package()
    proxy = types.ModuleType(spec["stem"])
    for name, kind in spec["names"].items():
        setattr(proxy, name, Recorder(name, kind, log))
    sys.modules[spec["stem"]] = proxy
    path = os.path.join(workdir, "geak_perf_definition.py")
    with open(path, "w") as handle:
        handle.write(spec["perf_harness"])
    module_spec = importlib.util.spec_from_file_location("geak_perf_definition", path)
    perf = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(perf)
    except ImportError as error:
        row["failure"] = "imports a name the reference does not define as a function or class"
        raise error
    mode = host_device()
    row["phase"] = "get_input_tensors"

    def generate(seed: int):
        harness_run._seed(seed)
        definition = perf.performance_metrics()
        with mode:
            definition.get_input_tensors()
        return definition

    started = time.perf_counter()
    try:
        definition = generate(SEED)
    finally:
        row["generation_calls"] = sorted({call["name"] for call in log})  # inputs made by the module
    log.clear()
    row["generate_s"] = round(time.perf_counter() - started, 3)
    inputs = list(definition.input_tensors)
    row["input_bytes"] = [nbytes(list(tensors(item))) for item in inputs]
    first = [digest(item) for item in inputs]
    report.emit()
    row["phase"] = "call_op"
    per_input = []
    for host_input in inputs:
        start = len(log)
        summary = {}
        try:
            with mode:
                definition.call_op(host_input)  # to_cuda is the identity here
        except Exception as error:  # noqa: BLE001  (the survey classifies it)
            summary = {"failure": classify(error, len(log) - start), "error": f"{type(error).__name__}: {str(error)[:200]}"}
        per_input.append({**record_calls(log, start, spec["entry_point"]), **summary})
    row["first_calls"] = [{"name": call["name"], "args": describe(call["args"]), "kwargs": describe(call["kwargs"])}
                          for call in log[:4]]
    row["cuda_named"] = mode.named
    finish(row, per_input, spec["entry_point"])
    del definition, inputs, host_input, log[:]
    report.emit()
    seed_check(row, first, lambda seed: [digest(item) for item in generate(seed).input_tensors])


# --- ROCm ---------------------------------------------------------------------------------

class _RocmPlugin:
    """Pytest plugin: swaps the kernel part's names for recorders in the test module before each
    test, times the test body up to its op's bench, records the calls made inside the bench."""

    def __init__(self, names: dict, seed: int):
        self.names, self.seed, self.log, self.cases = names, seed, [], {}
        self.current, self.started, self.collect_error = None, 0.0, ""

    def pytest_runtest_setup(self, item):
        from fitness.sandbox import harness_run

        for name, kind in self.names.items():
            if name in vars(item.module):  # a recorder of an earlier run logs elsewhere: replaced too
                setattr(item.module, name, Recorder(name, kind, self.log))
        harness_run._seed(self.seed)
        self.current, self.started = item.name, time.perf_counter()
        self.cases[item.name] = {"calls": 0, "names": [], "arg_bytes": 0, "kinds": [], "outside": 0, "benched": 0}

    def bench(self, op, *_, **kwargs):
        """The do_bench stand-in: runs the op once, recording what it calls."""
        case = self.cases[self.current]
        case["generate_s"] = round(time.perf_counter() - self.started, 3)
        case["outside"] += len(self.log)
        start = len(self.log)
        try:
            op()
        except Exception as error:  # noqa: BLE001  (the survey classifies it)
            case.update(failure=classify(error, len(self.log) - start),
                        error=f"{type(error).__name__}: {str(error)[:200]}")
        recorded = record_calls(self.log, start, "")
        for key in ("calls", "names", "arg_bytes"):
            case[key] += recorded[key]
        case["kinds"] = sorted(set(case["kinds"]) | set(recorded["kinds"]))
        case["digest"] = case.get("digest", "") + digest([[c["args"], c["kwargs"]] for c in self.log[start:]])
        case["benched"] += 1
        self.log.clear()
        quantiles = kwargs.get("quantiles")
        return [1.0] * len(quantiles) if quantiles else 1.0

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_error = str(report.longrepr).strip().splitlines()[-1][:300]

    def pytest_runtest_makereport(self, item, call):
        case = self.cases.get(item.name)
        if case is not None and call.excinfo is not None and call.excinfo.typename == "Skipped":
            self.cases.pop(item.name)  # a parametrization the test skips is no performance input
        elif case is not None and call.excinfo is not None and call.when == "call" and not case["benched"]:
            error = call.excinfo.value
            case.update(failure=classify(error, len(self.log)) + " before its bench",
                        error=f"{type(error).__name__}: {str(error)[:200]}")


def _pretend_mi300x() -> None:
    """Makes Triton's active driver report GEAK-eval's card (hip, gfx942), so that module code
    choosing parameters by `driver.active.get_current_target()` runs on the host; the
    kernels it would pick never run here."""
    import torch
    import triton.runtime
    from triton.backends.compiler import GPUTarget

    class Driver:
        def get_current_target(self):
            return GPUTarget("hip", "gfx942", 64)

        def get_current_device(self):
            return 0

        def get_active_torch_device(self):
            return torch.device("cpu")

    triton.runtime.driver.set_active(Driver())


def rocm(spec: dict, report: Report, workdir: str) -> None:
    import pytest
    import triton.testing

    from benchmarks.external.common import SEPARATOR
    from fitness.sandbox import harness_run

    row = report.row
    module = f"test_{spec['task'].replace('.', '_')}"
    path = os.path.join(workdir, f"{module}.py")
    with open(path, "w") as handle:
        handle.write(f"{spec['kernel'].rstrip()}\n\n\n{SEPARATOR}\n\n{spec['tests']}")
    shim = harness_run._geak_shim(workdir)
    mode = host_device()
    _pretend_mi300x()

    def run(seed: int) -> dict:
        plugin = _RocmPlugin(spec["names"], seed)
        shim.PytestBenchmarker.run_benchmark = lambda benchmarker, *_, **__: plugin.bench(benchmarker.op_callable)
        triton.testing.do_bench = plugin.bench
        with mode:
            code = pytest.main([path, "-q", "-p", "no:cacheprovider", f"--confcutdir={workdir}",
                                f"--rootdir={workdir}", "-k", "test_performance and not test_save_performance_results"],
                               plugins=[plugin])
        if code not in (0, 1) and not plugin.cases:
            raise RuntimeError(f"pytest exit code {code}: nothing collected: {plugin.collect_error}")
        return plugin.cases

    row["phase"] = "test_performance"
    started = time.perf_counter()
    cases = run(SEED)
    row["wall_s"] = round(time.perf_counter() - started, 3)
    per_input = list(cases.values())
    row["generate_s"] = round(sum(case.get("generate_s", 0.0) for case in per_input), 3)
    row["generate_s_per_input"] = [case.get("generate_s") for case in per_input]
    row["outside_bench_calls"] = sum(case["outside"] for case in per_input)
    row["cuda_named"] = mode.named
    for case in per_input:
        if not case["benched"] and not case.get("failure"):
            case.update(failure="the test never reached its bench", error="")
    finish(row, per_input, spec["entry_point"])
    report.emit()
    first = [case.get("digest") for case in per_input]
    if row.get("generate_s", 0) > SEED_CHECK_MAX_S:
        row["seed_check"] = f"skipped: generation over {SEED_CHECK_MAX_S:.0f} s"
        return
    row["phase"] = "seed check"
    row["deterministic"] = [case.get("digest") for case in run(SEED).values()] == first
    harness_run._salt_seeds(1)  # every seed the test sets, salted (irreversible: last)
    other = [case.get("digest") for case in run(SEED).values()]
    changed = sum(a != b for a, b in zip(first, other)) + abs(len(first) - len(other))
    row["changes_with_seed"] = "all" if changed >= len(first) else ("some" if changed else "")


def main(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    spec = json.loads(sys.stdin.read())
    report = Report(spec)
    workdir = tempfile.mkdtemp(prefix="recordable-")
    sys.path.insert(0, workdir)
    try:
        (rocm if spec["suite"] == "rocm" else tritonbench)(spec, report, workdir)
        report.row["phase"] = "done"
    except BaseException as error:  # noqa: BLE001  (the row says what happened)
        report.row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        if report.row["phase"] == "seed check":
            report.row["phase"], report.row["seed_check"] = "done", "failed"
        else:
            memory = isinstance(error, MemoryError) or "can't allocate memory" in str(error)
            uses = report.row.get("generation_calls") and "None" in str(error)
            report.row.setdefault("failure", f"host memory over the child's limit in {report.row['phase']}"
                                  if memory else "get_input_tensors uses a result of the kernel module"
                                  if uses else f"{type(error).__name__} in {report.row['phase']}")
            report.row["status"] = "failed"
    report.emit()
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (threads of triton/pytest)
