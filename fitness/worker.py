"""The sandboxed worker process: reads a request, runs one stage, replies, repeats.

Started by `fitness.pool` as `python -m fitness.worker REQUEST_FD REPLY_FD` in its own
session, temporary directory and scrubbed environment. A worker has one role for life:
"candidate" workers import untrusted candidates and run them; "checker" workers only
regenerate inputs, run the task's reference and compare, and never import a candidate, so
a candidate that patches torch in its own process cannot touch the comparison.

Stages (one request each): load (import + entry point + signature), call (one case, one
seed: run, record, save outputs), bench (time every case, then re-check on refreshed
inputs), check (checker role: compare saved outputs with the reference).
"""

from __future__ import annotations

import faulthandler
import importlib.util
import inspect
import os
import resource
import sys
import traceback

from fitness import protocol

_TRACE_CHARS = 4000
_FATAL_MARKERS = ("illegal memory access", "misaligned address", "memory access fault",
                  "hsa_status_error", "unspecified launch failure", "illegal instruction")


def _trace(error: BaseException, module_path: str | None = None) -> str:
    text = "".join(traceback.format_exception(error))
    if module_path:
        text = text.replace(module_path, "candidate.py")
    return text[-_TRACE_CHARS:]


def _classify(error: BaseException) -> tuple[str, bool]:
    """Returns (failure kind, whether the device context is now unusable)."""
    from fitness.device import AMD_ONLY_LAUNCH_OPTIONS

    text = f"{type(error).__name__}: {error}".lower()
    names = {cls.__name__ for cls in type(error).__mro__}
    if any(marker in text for marker in _FATAL_MARKERS):
        return "illegal_memory_access", True
    if "cuda error" in text or "hip error" in text or "acceleratorerror" in text.replace(" ", ""):
        return "runtime_error", True
    if any(option in text for option in AMD_ONLY_LAUNCH_OPTIONS):
        return "unsupported_on_backend", False
    # The interpreter reports what a GPU build rejects at compile time as InterpreterError.
    if names & {"CompilationError", "CompileTimeAssertionFailure", "InterpreterError"}:
        return "compile_error", False
    return "runtime_error", False


class Worker:
    """State of one worker process: its device, instruments and the loaded candidate."""

    def __init__(self, request: dict):
        import torch

        from fitness import instrument, probe, timing

        self.role = request["role"]
        self.device = request["device"]
        self.torch = torch
        self.launches = instrument.LaunchCounter()
        self.launches.install()
        self.threads = instrument.ThreadWatch(self.launches)
        self.threads.install()
        self.host_reads = instrument.HostReadWatch(self.launches)
        self.host_reads.install()
        self.tripwire = instrument.ReferenceTripwire()
        timing.bind_clocks()
        self.snapshot = instrument.HarnessSnapshot()
        self.entry = None
        self.module_path = None
        self.baselines: dict[str, object] = {}
        self.timed_inputs: list[tuple] = []  # kept from `bench` for `recheck`
        self._loaded = 0
        with instrument.OpRecorder(self.launches):  # the first dispatch mode pays imports
            probe.run(self.device.torch_device)

    def _synchronize(self) -> None:
        if self.device.backend != "interpreter":
            self.torch.cuda.synchronize()

    def _import(self, source: str, stem: str):
        self._loaded += 1
        name = f"{stem}_{self._loaded}"
        path = os.path.abspath(f"{name}.py")
        with open(path, "w") as handle:
            handle.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module, path

    def load(self, request: dict) -> dict:
        if self.role != "candidate":
            return {"ok": False, "kind": "harness_error", "trace": "a checker never loads candidates"}
        task = request["task"]
        self.tripwire.install(task.reference)
        self.entry = None
        try:
            module, self.module_path = self._import(request["source"], "candidate")
        except SyntaxError as error:
            return {"ok": False, "kind": "syntax_error", "trace": _trace(error, self.module_path)}
        except BaseException as error:  # the candidate's import may raise anything, SystemExit included
            return {"ok": False, "kind": "import_error", "trace": _trace(error, self.module_path)}
        entry = getattr(module, task.entry_point, None)
        if not callable(entry):
            return {"ok": False, "kind": "missing_entry_point",
                    "trace": f"the module defines no function {task.entry_point!r}"}
        mismatch = _signature_mismatch(entry, task.reference, task.entry_point)
        if mismatch:
            return {"ok": False, "kind": "signature_mismatch", "trace": mismatch}
        self.entry = entry
        return {"ok": True, "patched": self.snapshot.changed()}

    def _inputs(self, task, params, seed):
        return task.make_inputs(params, seed, self.device.torch_device)

    def _observed_call(self, fn, inputs) -> tuple[object, dict]:
        from fitness import checking
        from fitness.instrument import OpRecorder

        self.launches.count = 0
        self.threads.started = 0
        self.host_reads.count = 0
        self.tripwire.calls = 0
        pristine = [t.clone() if isinstance(t, self.torch.Tensor) else None for t in inputs]
        recorder = OpRecorder(self.launches, poison=True)
        with recorder:
            out = fn(*inputs)
        self._synchronize()
        modified = [i for i, (before, after) in enumerate(zip(pristine, inputs))
                    if before is not None and not checking.bitwise_equal(before, after)]
        return out, {"inputs_modified": modified, "launches": self.launches.count,
                     "ops": sorted(recorder.ops), "threads_started": self.threads.started, "host_reads": self.host_reads.count,
                     "reference_calls": self.tripwire.calls, "patched": self.snapshot.changed()}

    def _save(self, out, path: str) -> dict | None:
        """Saves plain CPU copies of the outputs; returns a failure for odd outputs."""
        torch = self.torch
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        for value in outputs:
            if type(value) is not torch.Tensor:
                return {"ok": False, "kind": "wrong_type",
                        "trace": f"the entry point returned a {type(value).__module__}."
                                 f"{type(value).__qualname__}; expected plain torch.Tensor outputs"}
        torch.save({"outputs": [t.detach().cpu() for t in outputs]}, path)
        return None

    def call(self, request: dict) -> dict:
        if self.entry is None:
            return {"ok": False, "kind": "harness_error", "trace": "call before a successful load"}
        task = request["task"]
        inputs = self._inputs(task, request["params"], request["seed"])
        start = _now()
        out, observed = self._observed_call(self.entry, inputs)  # errors: _serve classifies
        failure = self._save(out, request["out_path"])
        return failure or {"ok": True, "elapsed_s": _now() - start, **observed}

    def _baseline(self, task):
        if task.name not in self.baselines:
            module, _ = self._import(task.baseline_source, f"baseline_{task.name}")
            self.baselines[task.name] = getattr(module, task.entry_point)
        return self.baselines[task.name]

    def bench(self, request: dict) -> dict:
        """Times the candidate (and the baseline when asked) on each case; keeps the inputs.

        Runs while the engine holds the device exclusively, so it does nothing but time:
        the re-check call and the saving of its output are `recheck`'s, outside the lock.
        """
        from fitness import timing

        task = request["task"]
        baseline = self._baseline(task) if request["time_baseline"] else None
        results, self.timed_inputs = [], []
        for params, timing_seed in request["cases"]:
            inputs = self._inputs(task, params, timing_seed)
            fns = [lambda: self.entry(*inputs)]
            if baseline is not None:
                fns.append(lambda: baseline(*inputs))
            stats = timing.bench(fns, self.device, request.get("timing"))
            self.timed_inputs.append(inputs)
            results.append({"latency": stats[0].__dict__,
                            "baseline": stats[1].__dict__ if baseline is not None else None})
        return {"ok": True, "cases": results}

    def recheck(self, request: dict) -> dict:
        """Calls the candidate again on the very tensors it was timed on, refilled in place
        with fresh values (same pointers), and saves the outputs: a result cached during
        timing is caught by the checker."""
        task = request["task"]
        results = []
        for inputs, (params, recheck_seed, out_path) in zip(self.timed_inputs, request["cases"]):
            fresh = self._inputs(task, params, recheck_seed)
            for old, new in zip(inputs, fresh):
                if isinstance(old, self.torch.Tensor):
                    old.copy_(new)
            out, observed = self._observed_call(self.entry, inputs)
            failure = self._save(out, out_path)
            if failure:
                return failure
            results.append(observed)
        self.timed_inputs = []
        return {"ok": True, "cases": results}

    def check(self, request: dict) -> dict:
        from fitness import checking

        if self.role != "checker":
            return {"ok": False, "kind": "harness_error", "trace": "only a checker compares"}
        verdict = checking.check_case(request["task"], request["params"], request["calls"],
                                      self.device.torch_device)
        return {"ok": True, **verdict}


def _now() -> float:
    import time

    return time.perf_counter()


def _signature_mismatch(entry, reference, name: str) -> str:
    """Returns why `entry` cannot be called like `reference`, or "" when it can."""
    if reference is None:
        return ""
    try:
        wanted = inspect.signature(reference)
        got = inspect.signature(entry)
    except (TypeError, ValueError):
        return ""
    positional = [p for p in wanted.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        got.bind(*[None] * len(positional))
    except TypeError as error:
        return (f"{name}{got} cannot be called like the reference {name}{wanted}: {error}")
    return ""


def _serve(request_fd: int, reply_fd: int) -> None:
    init = protocol.recv_request(request_fd)
    try:
        worker = Worker(init)
    except BaseException as error:
        protocol.send_reply(reply_fd, {"ok": False, "kind": "harness_error", "trace": _trace(error)})
        return
    protocol.send_reply(reply_fd, {"ok": True, "pid": os.getpid()})
    handlers = {"load": worker.load, "call": worker.call, "bench": worker.bench,
                "recheck": worker.recheck, "check": worker.check}
    while True:
        try:
            request = protocol.recv_request(request_fd)
        except protocol.ProtocolError:
            return  # the parent closed the pipe: shut down
        try:
            reply = handlers[request["op"]](request)
        except BaseException as error:  # a stage must always answer; every op's errors,
            # candidate exceptions and sys.exit included, are classified here and only here
            kind, fatal = _classify(error)
            reply = {"ok": False, "kind": kind, "fatal": fatal,
                     "trace": _trace(error, worker.module_path)}
        protocol.send_reply(reply_fd, reply)
        if reply.get("fatal"):
            os._exit(3)  # the device context is poisoned; the parent respawns


def main() -> None:
    request_fd, reply_fd = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable(file=sys.stderr, all_threads=False)
    _serve(request_fd, reply_fd)
    os._exit(0)


if __name__ == "__main__":
    main()
