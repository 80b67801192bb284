"""The sandboxed worker: loads one candidate, runs it on the judge's inputs; the judge times it.

Run in the sandbox as `python -m fitness.sandbox.worker REQ REPLY [CHANNEL]`, JSON both ways
(`fitness.processes.protocol`). It never sees a Task: a source text, an entry point name and
input tensors the judge made (on a CUDA GPU in a buffer the judge owns, lent on CHANNEL; else
raw files under /inputs). It makes no judgement: what it reports is evidence.

One request each: load, precompile (every case compiled on stand-ins, nothing launched),
call; per timed case on a GPU, timed_stage (the judge's lent buffer mapped, warm-up, beside
other work) and timed_capture (a CUDA graph of the runs) then arm once per batch (`fitness.sandbox.timed`); on the
interpreter run_batch (the judge's input files in, output files out, its CPU time read from
outside); release (the walk is over); harness (an external suite's own harness,
`fitness.sandbox.harness_run`). A worker serves one candidate (`fitness.processes.pool`).
Every call runs under the same instruments (`_observed`): a best-effort audit whose reports
explain a failure; no number here enters a verdict.
"""

from __future__ import annotations

import faulthandler
import inspect
import os
import socket
import sys
import time
import traceback

from fitness.measure import compile_only, timing
from fitness.processes import host_words, modules, protocol
from fitness.processes import shared_memory

_TRACE_CHARS = 4000
_INPUTS_DIR = os.environ.get("KERNELEVO_INPUTS", "/inputs")  # set only with the sandbox off


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
    if any(marker in text for marker in protocol.POISONED_MARKERS):
        return "illegal_memory_access", True
    if "OutOfMemoryError" in names or "out of memory" in text:  # the device is shared: maybe a
        # neighbour's memory (Triton's launch says "Triton Error [CUDA]: out of memory")
        return "out_of_memory", False
    if protocol.poisons_context(error):
        return "runtime_error", True
    if any(option in text for option in AMD_ONLY_LAUNCH_OPTIONS):
        return "unsupported_on_backend", False
    # The interpreter reports what a GPU build rejects at compile time as InterpreterError.
    if names & {"CompilationError", "CompileTimeAssertionFailure", "InterpreterError"}:
        return "compile_error", False
    return "runtime_error", False


class _Observed:
    """What the candidate did over one or more calls, for the judge's rules
    (`fitness.judge.anticheat.call_verdict`): the fewest launches of any call, every torch op,
    threads started and host reads over all of them; per op, the most work of any one call,
    and the fewest input elements of any call (what that work is weighed against)."""

    def __init__(self):
        self.launches: int | None = None
        self.ops: set[str] = set()
        self.work: dict[str, list[int]] = {}
        self.input_elements: int | None = None
        self.threads_started = 0
        self.host_reads = 0

    def add(self, launches: int, recorder, input_elements: int, threads_started: int,
            host_reads: int) -> None:
        self.launches = launches if self.launches is None else min(self.launches, launches)
        self.ops |= recorder.ops
        for name, work in recorder.work.items():
            most = self.work.setdefault(name, [0, 0])
            most[:] = [max(a, b) for a, b in zip(most, work)]
        self.input_elements = (input_elements if self.input_elements is None
                               else min(self.input_elements, input_elements))
        self.threads_started += threads_started
        self.host_reads += host_reads

    def report(self, patched: list[str]) -> dict:
        return {"launches": self.launches or 0, "ops": sorted(self.ops), "work": self.work,
                "input_elements": self.input_elements or 0,
                "threads_started": self.threads_started, "host_reads": self.host_reads,
                "patched": patched}


class Worker:
    """State of one worker process: its device, instruments and the loaded candidate."""

    def __init__(self, request: dict, channel: socket.socket | None):
        import torch

        from fitness.device import DeviceInfo
        from fitness.sandbox import instrument, interpreter_autotune, probe

        self.device = DeviceInfo(**request["device"])
        interpreter_autotune.install(self.device.backend)  # the interpreter has no benchmarker
        self.torch = torch
        self.launches = instrument.LaunchCounter()
        self.launches.install()
        self.stall = instrument.StallWatch(self.launches)
        self.stall.install()  # before the thread watch: its own thread is not the candidate's
        self.threads = instrument.ThreadWatch(self.launches)
        self.threads.install()
        self.host_reads = instrument.HostReadWatch(self.launches)
        self.host_reads.install()
        self.snapshot = instrument.HarnessSnapshot()
        self.entry = None
        self.module_path = None
        self.stall_s = None  # the judge's stall limit for the loaded candidate
        self.timed_observed = _Observed()
        self.timed = None  # the timed case staged on the judge's lent buffer (a GPU)
        self.previous_inputs: list = []
        self.channel = channel
        self.shares = channel is not None and shared_memory.available(self.device.backend)
        self.mapped: list = []  # shared buffers of the last request (its inputs and outputs)
        self.fresh: list = []  # shared buffers this request has mapped so far
        self._loaded = 0
        began = time.monotonic()
        torch.empty(1, device=self.device.torch_device)  # a GPU's context is made here
        made = time.monotonic()
        with instrument.OpRecorder(self.launches):  # the first dispatch mode pays imports
            probe.run(self.device.torch_device)
        # where a fresh worker's start-up went (its own word: the engine's stats, no verdict)
        self.started_s = {"device": made - began, "probe": time.monotonic() - made}

    def _synchronize(self) -> None:
        if self.device.backend != "interpreter":
            self.torch.cuda.synchronize()

    def load(self, request: dict) -> dict:
        self.entry = None
        self.timed, self.previous_inputs = None, []  # the last candidate's, then its memory
        self._unmap_all()
        shared_memory.return_cached_memory(self.device.backend)
        self._loaded += 1
        name = f"candidate_{self._loaded}"
        self.module_path = os.path.abspath(f"{name}.py")
        self.stall_s = request.get("stall_s")
        with open(self.module_path, "w") as handle:
            handle.write(request["source"])
        try:
            module = modules.import_file(self.module_path, name, lambda: self.stall.watching(
                self.module_path, self.stall_s))
        except SyntaxError as error:
            return {"ok": False, "kind": "syntax_error", "trace": _trace(error, self.module_path)}
        except BaseException as error:  # the candidate's import may raise anything, SystemExit included
            return {"ok": False, "kind": "import_error", "trace": _trace(error, self.module_path)}
        # device work the import launched ends inside the judge's hold on the load (no timing
        # runs beside it); a fault it raises is classified by `_serve` (a poisoned context)
        self._synchronize()
        entry_point = request["entry_point"]
        entry = module.__dict__.get(entry_point)
        if not callable(entry):
            return {"ok": False, "kind": "missing_entry_point",
                    "trace": f"the module defines no function {entry_point!r}"}
        if request.get("entry_call") is not None:
            try:  # a model's constructor is the candidate's code too: whatever it raises is reported
                entry = _entry_call(module, entry, request["entry_call"], self.device.torch_device)
            except BaseException as error:
                return {"ok": False, "kind": "runtime_error", "trace": _trace(error, self.module_path)}
            self._synchronize()
        mismatch = _arity_mismatch(entry, request["arity"], entry_point)
        if mismatch:
            return {"ok": False, "kind": "signature_mismatch", "trace": mismatch}
        self.entry = _with_written(entry, request.get("written") or [])
        return {"ok": True, "patched": self.snapshot.changed()}

    def precompile(self, request: dict) -> dict:
        """Compiles the candidate's kernels for every case before its first call, launching
        nothing (`LaunchCounter.compiling_only`; Triton compiles the kernels side by side
        where it can): the engine then lets this run while another candidate is timed,
        since it is the CPU's work. The inputs are stand-ins in each case's layout as the
        judge describes it (dtype, shape, strides, offset: what Triton specialises
        on). An exception ends it early and is not a verdict: the calls that follow meet
        whatever the candidate does on real inputs and are judged on that. The reply says
        how many launches were withheld: a candidate that launched here and no more later
        replays a stored result."""
        if self.entry is None:
            return {"ok": False, "kind": "harness_error", "trace": "precompile before a successful load"}
        self.launches.withheld = 0
        stopped = compile_only.compile_cases(self.entry, request["cases"], self.launches,
                                             self.device.torch_device,
                                             self.stall.watching(self.module_path, self.stall_s))
        shared_memory.return_cached_memory(self.device.backend)
        return {"ok": True, "stopped": stopped, "withheld": self.launches.withheld}

    def _inputs(self, where: dict) -> tuple[list, object]:
        """Returns (input values, the shared buffer they live in or None). A shared buffer
        is mapped from the descriptor the engine relayed, labelled with the call's token,
        and kept in `fresh` from that moment: a request that fails half-way leaves it
        there, to be released with the next request's older buffers instead of never."""
        if "shared" not in where:
            return protocol.read_values(_INPUTS_DIR, where["specs"], self.device.torch_device), None
        layout = where["shared"]
        buffer = self._mapped(where["token"], layout["size"])
        self.fresh.append(buffer)
        return shared_memory.unpack(buffer, layout["values"]), buffer

    def _mapped(self, token: str, size: int) -> shared_memory.SharedBuffer:
        """Maps the shared buffer whose descriptor the engine relayed, labelled `token`."""
        fd = shared_memory.receive_fd(self.channel, token, timeout_s=30)
        try:
            return shared_memory.SharedBuffer.open(fd, size, self.torch.cuda.current_device())
        finally:
            os.close(fd)

    def _remap(self) -> None:
        """Releases the older requests' buffers now that this one's are mapped (so two
        calls never share input addresses)."""
        for buffer in self.mapped:
            buffer.release()
        self.mapped, self.fresh = self.fresh, []

    def _unmap_all(self) -> None:
        """Releases every buffer this process maps: the walk is over. A mapping dropped
        without release would hold the checker's memory for as long as this process lives."""
        for buffer in self.mapped + self.fresh:
            buffer.release()
        self.mapped, self.fresh = [], []

    def _observed(self, fn, inputs, observed: _Observed, capturing: bool = False,
                  poison: bool = True):
        """Returns (what `fn()` returned, the fresh allocations left unpoisoned): one call
        of the candidate on `inputs` under the instruments every call gets, its observations
        added to `observed`. `capturing`: a CUDA graph capture, whose poison is deferred to
        before each replay (`OpRecorder`'s `defer`)."""
        from fitness.sandbox.instrument import OpRecorder

        self.launches.count = 0
        self.threads.started = 0
        self.host_reads.count = 0
        recorder = OpRecorder(self.launches, poison=poison, defer=capturing)
        with recorder:
            out = fn()
        elements = sum(v.numel() for v in inputs if isinstance(v, self.torch.Tensor))
        observed.add(self.launches.count, recorder, elements, self.threads.started,
                     self.host_reads.count)
        return out, recorder.fresh

    def _observed_call(self, inputs) -> tuple[object, dict]:
        observed = _Observed()
        with self.stall.watching(self.module_path, self.stall_s):
            out, _ = self._observed(lambda: self.entry(*inputs), inputs, observed)
        self._synchronize()
        return out, observed.report(self.snapshot.changed())

    def _write(self, out, inputs, prefix: str, with_inputs: bool, where: dict,
               shared) -> dict:
        """Hands the outputs back: into the shared buffer's slots when they came with one
        and fit, else as raw files; with files, also the inputs as they are after the call
        when asked (a shared buffer's input region is the judge's own memory)."""
        torch = self.torch
        outputs = _outputs(out)
        for value in outputs:
            if type(value) is not torch.Tensor:
                return {"ok": False, "kind": "wrong_type",
                        "trace": f"the entry point returned a {type(value).__module__}."
                                 f"{type(value).__qualname__}; expected plain torch.Tensor outputs"}
        if shared is not None:
            specs = shared_memory.fill_slots(shared, where["shared"]["slots"], outputs)
            if specs is not None:
                self._synchronize()
                return {"ok": True, "outputs": specs, "inputs_after": []}
        after = protocol.write_values(".", f"{prefix}-in", inputs) if with_inputs and shared is None else []
        return {"ok": True, "outputs": protocol.write_values(".", f"{prefix}-out", outputs),
                "inputs_after": after}

    def call(self, request: dict) -> dict:
        if self.entry is None:
            return {"ok": False, "kind": "harness_error", "trace": "call before a successful load"}
        inputs, shared = self._inputs(request["inputs"])
        self._remap()
        out, observed = self._observed_call(inputs)  # errors: _serve classifies
        written = self._write(out, inputs, request["prefix"], request.get("with_inputs", True),
                              request["inputs"], shared)
        # Kept until the next call, so two calls never share input addresses: a result
        # that depends on where the inputs live shows as nondeterminism.
        self.previous_inputs = inputs
        return {**written, "observed": observed} if written["ok"] else written

    def _timed_call(self, observed: _Observed):
        """Returns call(inputs, arena, capturing): one timed run of the candidate under the
        instruments, its allocations served from `arena` (None: the normal allocator), no
        poison (the judge poisons the regions itself); returns its outputs as a list, or
        None when they are not plain tensors (the judge then finds them unreadable)."""
        def call(inputs, arena, capturing):
            def run():
                if arena is None:
                    return self.entry(*inputs)
                with arena:
                    return self.entry(*inputs)

            out, _ = self._observed(run, inputs, observed, capturing, poison=False)
            outputs = _outputs(out)
            return outputs if all(type(v) is self.torch.Tensor for v in outputs) else None

        return call

    def timed_stage(self, request: dict) -> dict:
        """Maps the judge's lent buffer of one timed case and warms the candidate up on its
        staging values (`timed.TimedCase.warm_up`): beside other work."""
        from fitness.sandbox import timed

        if self.entry is None:
            return {"ok": False, "kind": "harness_error", "trace": "timing before a successful load"}
        spent: dict = {}  # where the seconds went: the engine's meter, never a verdict
        with timing.accounted(spent):
            self._release_timed()
            where = request["where"]
            with timing.phase("map"):
                buffer = self._mapped(request["token"], where["size"])
                words = host_words.HostWords.open(shared_memory.receive_fd(
                    self.channel, request["token"] + host_words.TAG, timeout_s=30))
            self.timed_observed = _Observed()
            self.timed = timed.TimedCase(buffer, words, where, self._timed_call(self.timed_observed))
            with self.stall.watching(self.module_path, self.stall_s):
                self.timed.warm_up()
        return {"ok": True, "spent_s": spent,
                "observed": self.timed_observed.report(self.snapshot.changed())}

    def timed_capture(self, request: dict) -> dict:
        """Captures the staged case's runs in a graph (`timed.TimedCase.capture`)."""
        if self.timed is None:
            return {"ok": False, "kind": "harness_error", "trace": "capture before timed_stage"}
        spent: dict = {}
        with timing.accounted(spent), self.stall.watching(self.module_path, self.stall_s):
            captured = self.timed.capture(warm=request.get("warm") is True)
        return {"ok": True, **captured, "spent_s": spent,
                "observed": self.timed_observed.report(self.snapshot.changed())}

    def arm(self, request: dict) -> dict:
        """Enqueues one batch of the staged case behind the judge's `go` (`TimedCase.arm`)."""
        if self.timed is None:
            return {"ok": False, "kind": "harness_error", "trace": "arm before timed_stage"}
        return {"ok": True, "outputs": self.timed.arm(int(request["go"]), str(request["wake"])),
                "observed": self.timed_observed.report(self.snapshot.changed())}

    def run_batch(self, request: dict) -> dict:
        """Interpreter: runs the candidate once per input set the judge wrote (raw files),
        writing each run's outputs as raw files `<prefix>r<run>-out-*`; the judge reads this
        process's CPU time around the request, from outside."""
        observed = _Observed()
        call = self._timed_call(observed)
        outputs = []
        for run, specs in enumerate(request["runs"]):
            inputs = protocol.read_values(_INPUTS_DIR, specs, self.device.torch_device)
            out = call(inputs, None, False)
            outputs.append(None if out is None else
                           protocol.write_values(".", f"{request['prefix']}r{run}-out", out))
        return {"ok": True, "outputs": outputs, "observed": observed.report(self.snapshot.changed())}

    def _release_timed(self) -> None:
        if self.timed is not None:
            self.torch.cuda.synchronize()
            self.timed.buffer.release()
            self.timed.words.release()
            self.timed = None

    def release(self, request: dict) -> dict:
        """Lets every buffer of the walk go now, so an idle worker does not sit on a walk's
        inputs while its neighbours need the memory."""
        self._unmap_all()
        if self.device.backend != "interpreter":
            self._release_timed()
        self.previous_inputs = []
        shared_memory.return_cached_memory(self.device.backend)
        return {"ok": True}

    def harness(self, request: dict) -> dict:
        """Runs an external suite's own harness (`fitness.sandbox.harness_run`); the engine
        retires this process afterwards."""
        from fitness.sandbox import harness_run

        return harness_run.run(request, self.device, self.launches)


def _entry_call(module, entry, spec: dict, device: str):
    """Returns the function the inputs are handed to when the entry point is not one
    (`Task.entry_call`): a model `entry` builds from `spec["init"]` after torch is seeded
    with `spec["seed"]` (KernelBench's rule: the reference's weights come from the same
    seed), on `device`, called without autograd; a launch of kernel `entry` whose inputs
    are its `spec["args"]` arguments, a 3-int grid, then the values of `spec["meta"]`;
    method `spec["name"]` of class `entry` (an autograd Function's `apply`); `entry` with
    its last arguments passed by the keywords `spec["names"]`; or a
    performance file's call_op whole, on its input's leaves, with the candidate `module` as
    the kernel module it imports (`recorded.PerformanceCalls.tree`)."""
    import torch

    if spec["kind"] == "method":
        return getattr(entry, spec["name"])
    if spec["kind"] == "keywords":
        return _keyword_call(entry, list(spec["names"]))
    if spec["kind"] == "call_op":
        return _whole_call_op(module, spec)
    if spec["kind"] == "launch":
        count, meta = int(spec["args"]), list(spec["meta"])

        def launch(*inputs):
            entry[tuple(inputs[count:count + 3])](*inputs[:count], **dict(zip(meta, inputs[count + 3:])))

        return launch
    torch.manual_seed(spec["seed"])
    model = entry(*spec["init"]).to(device)

    def call(*inputs):
        with torch.no_grad():
            return model(*inputs)

    call.__wrapped__ = model.forward  # `inspect.signature` (the arity check) reads forward's
    return call


def _keyword_call(entry, names: list):
    """Returns `entry` as a function of its arguments' values in order, the last `names` of
    them passed by keyword (`recorded.PerformanceCalls.keywords`, whose `keyword_call` this
    process cannot import); raises TypeError when `entry` takes no such keywords."""
    parameters = inspect.signature(entry).parameters
    missing = [name for name in names if name not in parameters
               and not any(p.kind is p.VAR_KEYWORD for p in parameters.values())]
    if missing:
        raise TypeError(f"the entry point takes no keyword argument(s) {missing}; the task "
                        f"passes its last {len(names)} argument(s) as {names}")

    def call(*inputs):
        split = len(inputs) - len(names)
        return entry(*inputs[:split], **dict(zip(names, inputs[split:])))

    return call


def _whole_call_op(module, spec: dict):
    """Returns a performance file's call_op as a function of its input's leaves
    (`spec["tree"]`), the candidate `module` in the place of the kernel module it imports.
    `spec["modules"]`: the sources it imports, by module name, in order (GEAK-eval's
    stood in, then the performance file itself), as the checker imports them for the
    reference (`benchmarks.external.recorded`, which this process cannot import)."""
    import types

    from torch.utils._pytree import tree_unflatten, treespec_loads

    sys.modules[spec["module"]] = module
    for name in spec["modules"]:
        parts = name.split(".")
        for depth in range(1, len(parts)):
            package = sys.modules.setdefault(".".join(parts[:depth]), types.ModuleType(".".join(parts[:depth])))
            package.__path__ = []
        sys.modules[name] = made = types.ModuleType(name)
        exec(compile(spec["modules"][name], name, "exec"), made.__dict__)
    definition = sys.modules[name].performance_metrics()
    structure = treespec_loads(spec["tree"])
    return lambda *leaves: definition.call_op(tree_unflatten(list(leaves), structure))


def _outputs(out) -> list:
    """Returns what a call returned as its list of outputs; a returned tuple's None items are
    none (an optional state not asked for: fused_recurrent_delta's `(o, final_state)`)."""
    if isinstance(out, (tuple, list)):
        return [value for value in out if value is not None]
    return [out]


def _with_written(entry, written: list):
    """Returns `entry`, its outputs followed by the arguments at `written` (those the task's
    reference writes: a kernel that fills an `out` hands it back as an output)."""
    if not written:
        return entry

    def call(*inputs):
        out = entry(*inputs)
        returned = [] if out is None else list(out) if isinstance(out, (tuple, list)) else [out]
        return [*returned, *(inputs[at] for at in written)]

    return call


def _arity_mismatch(entry, arity: int, name: str) -> str:
    """Returns why `entry` cannot take `arity` positional arguments, or "" when it can."""
    try:
        signature = inspect.signature(entry)
        signature.bind(*[None] * arity)
    except (TypeError, ValueError) as error:
        return f"{name} cannot be called with the task's {arity} positional argument(s): {error}"
    return ""


def _serve(request_fd: int, reply_fd: int, channel: socket.socket | None) -> None:
    state: dict = {}

    def start(init: dict) -> tuple[dict, dict]:
        worker = state["worker"] = Worker(init, channel)
        return ({"load": worker.load, "precompile": worker.precompile, "call": worker.call,
                 "timed_stage": worker.timed_stage, "timed_capture": worker.timed_capture,
                 "arm": worker.arm,
                 "run_batch": worker.run_batch, "release": worker.release,
                 "harness": worker.harness},
                {"shares": worker.shares, "started_s": worker.started_s})

    def on_error(error: BaseException) -> dict:
        # every op's errors, candidate exceptions and sys.exit included, are classified
        # here and only here
        kind, fatal = _classify(error)
        module_path = state["worker"].module_path if "worker" in state else None
        return {"ok": False, "kind": kind, "fatal": fatal, "trace": _trace(error, module_path)}

    protocol.serve(request_fd, reply_fd, start, on_error)


def main() -> None:
    request_fd, reply_fd = int(sys.argv[1]), int(sys.argv[2])
    channel = socket.socket(fileno=int(sys.argv[3])) if len(sys.argv) > 3 else None
    faulthandler.enable(file=sys.stderr, all_threads=False)
    _serve(request_fd, reply_fd, channel)
    os._exit(0)


if __name__ == "__main__":
    main()
