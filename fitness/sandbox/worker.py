"""The sandboxed worker: loads one candidate at a time, runs it on the judge's inputs, times it.

Run in the sandbox as `python -m fitness.sandbox.worker REQ REPLY [CHANNEL]`, JSON both ways
(`fitness.processes.protocol`). It never sees a Task: a source text, an entry point name and
input tensors the judge made (on a CUDA GPU in a buffer the judge owns, lent on CHANNEL; else
raw files under /inputs). It makes no judgement: what it reports is evidence.

One request each: load, precompile (every case compiled on stand-ins, nothing launched),
call, stage (buffers, warm-up, capture, beside other work), then per case bench (timed on
inputs that change every run, drawn from a seed given only then), batch (runs back to back
on values drawn from another such seed, each run's outputs put where the judge reads them) and recheck (the timed buffers refilled
in place, called again); release (the walk is over); harness (an external suite's own
harness, `fitness.sandbox.harness_run`). Every call, checked or timed,
runs under the same instruments (`_observed`), so no call tells the candidate it is watched.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import inspect
import os
import socket
import sys
import traceback

from fitness.measure import compile_only
from fitness.processes import modules, protocol
from fitness.processes import shared_memory

_TRACE_CHARS = 4000
_FATAL_MARKERS = ("illegal memory access", "misaligned address", "memory access fault",
                  "hsa_status_error", "unspecified launch failure", "illegal instruction")
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
    if any(marker in text for marker in _FATAL_MARKERS):
        return "illegal_memory_access", True
    if "OutOfMemoryError" in names:  # the device is shared: maybe a neighbour's memory
        return "out_of_memory", False
    if "cuda error" in text or "hip error" in text or "acceleratorerror" in text.replace(" ", ""):
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


@dataclasses.dataclass
class _TimedCase:
    """One case's timing state, from `stage` to its re-check."""

    inputs: object  # timing.FreshInputs: the buffers and their refill
    observed: _Observed
    staged: object = None  # timing.Staged until the case is timed
    deferred: list = dataclasses.field(default_factory=list)  # a graph's fresh allocations


class Worker:
    """State of one worker process: its device, instruments and the loaded candidate."""

    def __init__(self, request: dict, channel: socket.socket | None):
        import torch

        from fitness.measure import timing
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
        timing.bind_clocks()
        self.snapshot = instrument.HarnessSnapshot()
        self.entry = None
        self.module_path = None
        self.stall_s = None  # the judge's stall limit for the loaded candidate
        self.timed: list[_TimedCase] = []  # per staged case, until the walk's last re-check
        self.previous_inputs: list = []
        self.channel = channel
        self.shares = channel is not None and shared_memory.available(self.device.backend)
        self.mapped: list = []  # shared buffers of the last request (its inputs and outputs)
        self.fresh: list = []  # shared buffers this request has mapped so far
        self._loaded = 0
        with instrument.OpRecorder(self.launches):  # the first dispatch mode pays imports
            probe.run(self.device.torch_device)

    def _synchronize(self) -> None:
        if self.device.backend != "interpreter":
            self.torch.cuda.synchronize()

    def load(self, request: dict) -> dict:
        self.entry = None
        self.timed, self.previous_inputs = [], []  # the last candidate's, then its memory
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
        mismatch = _arity_mismatch(entry, request["arity"], entry_point)
        if mismatch:
            return {"ok": False, "kind": "signature_mismatch", "trace": mismatch}
        self.entry = entry
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
        fd = shared_memory.receive_fd(self.channel, where["token"], timeout_s=30)
        try:
            buffer = shared_memory.SharedBuffer.open(fd, layout["size"], self.torch.cuda.current_device())
        finally:
            os.close(fd)
        self.fresh.append(buffer)
        return shared_memory.unpack(buffer, layout["values"]), buffer

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

    def _observed(self, fn, inputs, observed: _Observed, capturing: bool = False):
        """Returns (what `fn()` returned, the fresh allocations left unpoisoned): one call
        of the candidate on `inputs` under the instruments every call gets, its observations
        added to `observed`. `capturing`: a CUDA graph capture, whose poison is deferred to
        before each replay (`OpRecorder`'s `defer`)."""
        from fitness.sandbox.instrument import OpRecorder

        self.launches.count = 0
        self.threads.started = 0
        self.host_reads.count = 0
        recorder = OpRecorder(self.launches, defer=capturing)
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
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
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

    def stage(self, request: dict) -> dict:
        """Makes each case's timing buffers (copies of the inputs the judge made, refilled
        before every run with other values drawn from the case's staging `seed`,
        `timing.FreshInputs`; the timed runs' own seed comes with `bench`), warms the candidate up on them and
        captures it (`timing.stage`): the part of timing the judge lets run beside other work."""
        from fitness.measure import timing

        config = timing.TimingConfig(**request["timing"]) if request.get("timing") else None
        self.timed, spent = [], {}
        with timing.accounted(spent), self.stall.watching(self.module_path, self.stall_s):
            for case in request["cases"]:
                with timing.phase("buffers"):
                    inputs, _ = self._inputs(case["inputs"])
                    timed = _TimedCase(timing.FreshInputs(inputs, case["seed"]), _Observed())
                    del inputs
                timed.staged = timing.stage([self._timed_call(timed)], self.device, config,
                                            self._refill(timed))
                if timed.staged.methods[0] != "graph":
                    timed.deferred.clear()
                self.timed.append(timed)
            with timing.phase("release"):
                self._remap()
        patched = self.snapshot.changed()
        return {"ok": True, "spent_s": spent,
                "observed": [case.observed.report(patched) for case in self.timed]}

    def _timed_call(self, case: _TimedCase):
        """Returns the call timing makes of the candidate on `case`'s buffers: observed like
        every call; inside a graph capture, its fresh allocations are kept to poison before
        each replay (`_refill`)."""
        buffers = case.inputs.buffers

        def call():
            capturing = (self.device.backend != "interpreter"
                         and self.torch.cuda.is_current_stream_capturing())
            out, fresh = self._observed(lambda: self.entry(*buffers), buffers, case.observed,
                                        capturing)
            if capturing:
                case.deferred[:] = fresh
            return out

        return call

    @staticmethod
    def _refill(case: _TimedCase):
        """Returns what runs before every timed call of `case`, untimed: the next run's
        input values, and the poison a replayed graph's allocations get (an eager call's
        recorder poisons them itself)."""
        from fitness.sandbox.instrument import poison

        def refill() -> None:
            case.inputs.refill()
            for tensor in case.deferred:
                poison(tensor)

        return refill

    def bench(self, request: dict) -> dict:
        """Times one staged case (`case`: its place in `stage`'s list) with the device held
        alone. `give_up_above_us` (the judge's best so far, with a margin) lets a clear loser
        stop after its first batch of runs, `floors_us` (the work at the device's peaks)
        tells the timing whether it must settle as a kernel that heats the chip; `peak_mhz`
        is the clock a light kernel waits for, as the judge's trusted reads know it;
        `continued`: the case follows another of this candidate's (`one_callers_cases`);
        `runs_seed`: the seed of the timed runs' values, revealed only now, while the judge's
        clock runs. Replies with the stats and what the candidate did in this case's calls
        so far."""
        from fitness.measure import timing

        position = request["case"]
        if not (isinstance(position, int) and 0 <= position < len(self.timed)
                and self.timed[position].staged is not None):
            return {"ok": False, "kind": "harness_error",
                    "trace": f"bench of case {position!r}, which is not staged"}
        case = self.timed[position]
        runs_seed = request.get("runs_seed")
        if not isinstance(runs_seed, int):
            return {"ok": False, "kind": "harness_error", "trace": "bench without a runs seed"}
        case.inputs.reseed(runs_seed)
        staged = case.staged
        give_up, floors = request.get("give_up_above_us"), request.get("floors_us")
        spent: dict = {}
        with timing.accounted(spent), timing.one_callers_cases(bool(request.get("continued"))):
            [stats] = timing.time_staged(
                staged, give_up_above_us=[give_up if isinstance(give_up, (int, float)) else None],
                floors_us=[tuple(floors) if floors else None],
                peak_mhz=request.get("peak_mhz", 0.0))
        return {"ok": True, "case": stats.__dict__, "spent_s": spent,
                "observed": case.observed.report(self.snapshot.changed())}

    def batch(self, request: dict) -> dict:
        """Runs timed case `case` `runs` times back to back on values drawn from `seed`
        (`timing.run_judged_batch`), each run's outputs written as the run ends: into run r's
        slots of the judge's shared buffer (`where`), else copied and, once the runs are over,
        written as raw files `<prefix>-<r>-out-*`. The judge reads the outputs it chooses with
        this process stopped; the staged graph goes with this request."""
        from fitness.measure import timing

        case = self.timed[request["case"]]
        staged, case.staged = case.staged, None
        runs, where = request["runs"], request.get("where") or {}
        shared = self._inputs(where)[1] if "shared" in where else None
        self._remap()
        slots = where["shared"]["slots"] if shared is not None else []
        per_run = len(slots) // runs if runs else 0
        written: list = [None] * runs

        copies: dict[int, list] = {}  # runs whose outputs go to files, once the runs are over

        def keep(run: int, out) -> None:
            outputs = list(out) if isinstance(out, (tuple, list)) else [out]
            if any(type(value) is not self.torch.Tensor for value in outputs):
                return  # no outputs for the run: the judge finds it unreadable
            if shared is not None:
                written[run] = shared_memory.fill_slots(
                    shared, slots[run * per_run:(run + 1) * per_run], outputs)
            if written[run] is None:  # a copy now, the file after the runs: no gap between
                copies[run] = [value.clone() for value in outputs]  # runs a timing lacks

        case.inputs.reseed(request["seed"])
        spent: dict = {}
        with timing.accounted(spent):
            timing.run_judged_batch(staged, runs, keep)
        for run, outputs in copies.items():
            written[run] = protocol.write_values(".", f"{request['prefix']}-{run}-out", outputs)
        case.deferred.clear()
        return {"ok": True, "runs": written, "spent_s": spent,
                "observed": case.observed.report(self.snapshot.changed())}

    def release(self, request: dict) -> dict:
        """Lets every buffer of the walk go (the timing's and the last request's) now, not
        when the next candidate loads, so an idle worker does not sit on a walk's inputs and
        timing copies (GiBs for the largest tasks) while its neighbours need the memory."""
        self._unmap_all()
        self.timed, self.previous_inputs = [], []
        shared_memory.return_cached_memory(self.device.backend)
        return {"ok": True}

    def recheck(self, request: dict) -> dict:
        """Refills case `case`'s timed buffers in place (same pointers) with fresh inputs,
        calls the candidate and writes its outputs: a result cached during timing is caught.
        Sent right after the case's timed runs."""
        case = self.timed[request["case"]]
        values, shared = self._inputs(request["inputs"])
        self._remap()
        for old, new in zip(case.inputs.buffers, values):
            if isinstance(old, self.torch.Tensor):
                old.copy_(new)
        out, observed = self._observed_call(case.inputs.buffers)
        written = self._write(out, case.inputs.buffers, request["prefix"], False,
                              request["inputs"], shared)
        return {**written, "observed": observed} if written["ok"] else written

    def harness(self, request: dict) -> dict:
        """Runs an external suite's own harness (`fitness.sandbox.harness_run`); the engine
        retires this process afterwards."""
        from fitness.sandbox import harness_run

        return harness_run.run(request, self.device, self.launches)


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
                 "stage": worker.stage, "bench": worker.bench,
                 "batch": worker.batch, "recheck": worker.recheck,
                 "release": worker.release,
                 "harness": worker.harness},
                {"shares": worker.shares})

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
