"""The checker: a trusted process that makes inputs, runs references, compares, times baselines.

Started by `fitness.processes.pool` (unsandboxed: it never imports a candidate) as
`python -m fitness.judge.checker REQ REPLY [CHANNEL]`. One walk of the cascade leases one checker for
its whole duration: `prepare` makes a case's inputs from a seed the candidate has not seen,
hands them over (a GPU buffer this process owns, lent by descriptor, or raw files in the
worker's read-only input directory) and keeps the reference's outputs and a pristine copy
of the inputs here; `compare` reads what the worker put back (raw values only, every spec
validated) and returns the verdict. Baselines are timed
here too, with the same timing code the worker uses, so a candidate can neither see nor
slow nor cache the number it is compared against.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import resource
import socket
import sys
import time
import traceback

import torch

from fitness.measure import compile_only
from fitness.processes import modules, protocol
from fitness.processes import shared_memory
from fitness.measure import timing
from fitness.judge import checking
from fitness.measure.launches import LaunchCounter

BATCH_BYTES = 1 << 30
"""The most bytes of outputs a judged batch's runs leave in the judge's buffer, all runs
together: it caps the runs of a case with large outputs."""
_SETTLE_S = 0.002
"""Seconds between the two reads of a batch's outputs: what device work left queued past the
batch's end gets to show itself."""


@dataclasses.dataclass
class _Prepared:
    """One prepared call: what the judge keeps, and where the worker's copy lives."""

    pristine: list | None  # a copy of the inputs, when the judge checks they stay unchanged
    expected: list | None  # the reference's outputs; None for a timing's inputs
    seed: tuple  # (the inputs' seed, the timed run they are the values of, or None)
    specs: list  # file specs (raw-file transport), or the shared buffer's layout values
    input_dir: str | None
    shared: shared_memory.SharedBuffer | None = None
    slots: list | None = None

    def drop(self) -> None:
        """Frees what the call held: the shared buffer here, or the input files."""
        if self.shared is not None:
            self.shared.release()
        elif self.input_dir is not None:
            _remove(self.input_dir, self.specs)


class Checker:
    """Per-walk state: prepared calls (token -> _Prepared) and what spots replays."""

    def __init__(self, request: dict, channel: socket.socket | None):
        timing.bind_clocks()
        # `warm_baseline` compiles only; installed by the checker process (`_serve`), since
        # it patches Triton's classes for good
        self.launches = LaunchCounter()
        self.torch = torch
        self.device = request["device"]
        self.channel = channel
        self.shares = channel is not None and shared_memory.available(self.device.backend)
        self.prepared: dict[str, _Prepared] = {}
        self.last_call: tuple[tuple, list] | None = None  # (seed, outputs): the cascade repeats
        # a seed right after its first call, to check determinism
        self.output_digests: set[tuple] = set()  # every earlier output, to spot replays
        self.collected: dict[str, list] = {}  # a timed run's outputs, read in at once (`collect`)
        self.batches: dict[str, tuple] = {}  # token -> (shared buffer, its slots, outputs a run)
        self.baselines: dict[str, object] = {}
        self.staged_baseline: list = []  # (timing.Staged, floors) per case, until timed

    def warm_up(self) -> None:
        """Runs what a prepare and a compare do on the device once, on small tensors, before
        the start-up reply. A checker's first use of the device (its context, the modules of
        the random-number, matmul, float64 and copy kernels, a shared buffer's driver calls)
        is slow, and inside a walk's shared hold timing runs waited behind it: every checker
        of a new pool paid it in the first walks (evidence: RESULTS.md#checker-warm-up).
        Paid here, it is the pool's start-up, once per process."""
        torch, device = self.torch, self.device.torch_device
        generator = torch.Generator(device=device).manual_seed(0)
        floats = [torch.randn(64, 64, generator=generator, device=device, dtype=dtype)
                  for dtype in (torch.float16, torch.bfloat16, torch.float32)]
        inputs = [*floats, torch.randint(0, 64, (64,), generator=generator, device=device)]
        expected = [a @ a for a in floats] + [inputs[-1].clone()]
        if self.shares:
            buffer, layout = shared_memory.pack(
                inputs, [t.numel() * t.element_size() for t in expected],
                shared_memory.allocator(torch.cuda.current_device()))
            os.close(buffer.export())
            pristine = shared_memory.unpack(buffer, layout["values"])
            checking.bitwise_equal(pristine[0], inputs[0])
            buffer.release()
        checking.compare_outputs(expected, [t.clone() for t in expected], {})
        _digest(expected)
        shared_memory.return_cached_memory(self.device.backend)

    def reset(self, request: dict) -> dict:
        """Forgets the last walk (a new candidate starts) and hands its device memory back."""
        for entry in self.prepared.values():
            entry.drop()
        self.prepared.clear()
        self.collected.clear()
        for buffer, _, _ in self.batches.values():
            buffer.release()
        self.batches.clear()
        self.last_call = None
        self.output_digests.clear()
        self.staged_baseline = []
        shared_memory.return_cached_memory(self.device.backend)
        return {"ok": True}

    def prepare(self, request: dict) -> dict:
        """Makes a call's inputs from `seed` and hands them over: in a shared GPU buffer
        whose descriptor goes to the engine (`share`), or as files in the worker's input
        directory. Keeps the reference's outputs and, if asked, a pristine copy."""
        task, seed = request["task"], request["seed"]
        with timing.phase("make"):  # launches; the device runs them by the pack's end
            inputs = task.make_inputs(request["params"], seed, self.device.torch_device)
            pristine = expected = None
            if request.get("check_inputs"):  # the judge, not the worker, decides what is checked
                pristine = [t.clone() if isinstance(t, self.torch.Tensor) else t for t in inputs]
        with timing.phase("reference"):  # launches too
            if request.get("expect", True):  # a timing's inputs are only discarded, never compared
                expected = checking.as_list(task.reference(*inputs))
        token = request["token"]
        if request.get("share") and self.shares:
            slot_bytes = [t.numel() * t.element_size() for t in expected or []]
            allocate = shared_memory.allocator(self.torch.cuda.current_device())

            def allocate_timed(nbytes: int) -> shared_memory.SharedBuffer:
                with timing.phase("allocate"):
                    return allocate(nbytes)

            with timing.phase("pack"):
                buffer, layout = shared_memory.pack(inputs, slot_bytes, allocate_timed)
            self.prepared[token] = _Prepared(pristine, expected, (seed, None), layout["values"],
                                             None, buffer, layout["slots"])
            with timing.phase("export"):
                fd = buffer.export()
                try:
                    shared_memory.send_fd(self.channel, fd, token)
                finally:
                    os.close(fd)
            reply = {"ok": True, "shared": layout}
        else:
            specs = protocol.write_values(request["dir"], request["prefix"], inputs)
            self.prepared[token] = _Prepared(pristine, expected, (seed, None), specs, request["dir"])
            reply = {"ok": True, "specs": specs}
        # the inputs (packed or written) and the reference's temporaries, which would
        # otherwise stay cached here until the next walk
        del inputs
        with timing.phase("uncache"):
            shared_memory.return_cached_memory(self.device.backend, shared_memory.LARGE_CACHE_BYTES)
        return reply

    def describe(self, request: dict) -> dict:
        """Returns each case's input layouts (`protocol.layouts`), from inputs made as
        `prepare` makes them: what a worker needs to compile a candidate for the case
        before any call (`fitness.sandbox.worker.Worker.precompile`)."""
        task = request["task"]
        cases = [protocol.layouts(task.make_inputs(params, seed, self.device.torch_device))
                 for params, seed in request["cases"]]
        shared_memory.return_cached_memory(self.device.backend, shared_memory.LARGE_CACHE_BYTES)
        return {"ok": True, "cases": cases}

    def _outputs(self, entry: _Prepared, where: str, specs) -> list:
        """Returns the worker's outputs as private tensors: from the shared buffer's slots
        or from raw files (a spec says which; both validated)."""
        if not isinstance(specs, list):
            raise protocol.ProtocolError(f"expected a list of output specs, got {specs!r:.100}")
        values = []
        for spec in specs:
            if isinstance(spec, dict) and "slot" in spec and entry.shared is not None:
                values.append(shared_memory.read_slot(entry.shared, entry.slots, spec))
            else:
                values.extend(protocol.read_values(where, [spec], "cpu"))
        return values

    def compare(self, request: dict) -> dict:
        """Judges one call: outputs vs reference, inputs unchanged, determinism, replay."""
        task = request["task"]
        entry = self.prepared.pop(request["token"])
        where = request["dir"]
        try:
            with timing.phase("read"):
                actual = self._outputs(entry, where, request["outputs"])
                if entry.pristine is None:
                    after = []
                elif entry.shared is not None:  # the very buffer the worker was given
                    after = shared_memory.unpack(entry.shared, entry.specs)
                else:
                    after = protocol.read_values(where, request["inputs_after"], "cpu")
            with timing.phase("judge"):
                return self._verdict(task, entry, actual, after)
        except (protocol.ProtocolError, shared_memory.SharedMemoryError) as error:
            return {"ok": True, "kind": "wrong_type", "detail": f"unreadable outputs: {error}"}
        finally:
            entry.drop()
            _remove(where, request["outputs"])
            _remove(where, request["inputs_after"])

    def _verdict(self, task, entry: _Prepared, actual: list, after: list) -> dict:
        pristine, expected, seed = entry.pristine, entry.expected, entry.seed
        verdict = checking.compare_outputs(expected, actual, task.tolerance)
        if verdict["kind"] is None and pristine is not None:
            modified = [i for i, (before, now) in enumerate(zip(pristine, after))
                        if isinstance(before, self.torch.Tensor)
                        and not checking.bitwise_equal(before, now)]
            if len(after) != len(pristine):
                modified = list(range(len(pristine)))
            if modified:
                verdict = {"kind": "inputs_modified", "detail": f"the call modified input(s) "
                           f"{modified} in place; inputs must be left unchanged"}
        if verdict["kind"] is None and self.last_call is not None and self.last_call[0] == seed:
            reason = checking.disagreement(self.last_call[1], actual, expected, task.tolerance)
            if reason:
                verdict = {"kind": "nondeterministic", "detail": reason}
        with timing.phase("digest"):
            digest = _digest(actual)
        if verdict["kind"] == "mismatch" and digest in self.output_digests:
            verdict = {**verdict, "kind": "cheat_cached_result",
                       "detail": "a call on new inputs returned an earlier call's output "
                                 "unchanged; " + verdict.get("detail", "")}
        self.last_call = (seed, actual)
        self.output_digests.add(digest)
        return {"ok": True, "max_abs_err": 0.0, "rel_err": 0.0, "detail": "", **verdict}

    def batch_slots(self, request: dict) -> dict:
        """Makes the shared buffer a judged batch writes its runs' outputs into: `runs` sets
        of slots sized like the reference's outputs of prepared call `like` (the same case),
        as many runs as fit `BATCH_BYTES` (two at least); replies with the runs and, where
        buffers are shared, its layout (the descriptor goes to the engine). Elsewhere the
        worker writes files."""
        expected = self.prepared[request["like"]].expected or []
        nbytes = [t.numel() * t.element_size() for t in expected]
        runs = max(2, min(request["runs"], BATCH_BYTES // max(sum(nbytes), 1)))
        if not (request.get("share") and self.shares):
            return {"ok": True, "runs": runs}
        buffer, layout = shared_memory.pack([], nbytes * runs, shared_memory.allocator(
            self.torch.cuda.current_device()))
        self.batches[request["token"]] = (buffer, layout["slots"], len(nbytes))
        fd = buffer.export()
        try:
            shared_memory.send_fd(self.channel, fd, request["token"])
        finally:
            os.close(fd)
        return {"ok": True, "runs": runs, "shared": layout}

    def collect(self, request: dict) -> dict:
        """Reads the outputs of run `run` of a judged batch (`batch_slots`: from its shared
        slots, twice, a moment apart; else from the worker's raw files) into this process's
        memory under `token`, while the engine holds the worker stopped: nothing the
        candidate does later can rewrite what is judged (`judge_collected`), and outputs
        still changing after the batch ended (device work left running past its clock) are
        caught. The batch's files and buffer go."""
        token, where, specs = request["token"], request["dir"], request["outputs"]
        batch = self.batches.pop(token, None)
        try:
            if not isinstance(specs, list):
                raise protocol.ProtocolError(f"no outputs for run {request['run']}")
            if batch is None:
                self.collected[token] = protocol.read_values(where, specs, "cpu")
                return {"ok": True, "kind": None}
            buffer, slots, per_run = batch
            mine = slots[request["run"] * per_run:(request["run"] + 1) * per_run]
            first = [shared_memory.read_slot(buffer, mine, spec) for spec in specs]
            time.sleep(_SETTLE_S)
            again = [shared_memory.read_slot(buffer, mine, spec) for spec in specs]
            if not all(checking.bitwise_equal(a, b) for a, b in zip(first, again)):
                return {"ok": True, "kind": "cheat_forged_timing", "detail": "its outputs "
                        "changed after the batch reported its end: device work went on "
                        "past the judge's clock"}
            self.collected[token] = first
            return {"ok": True, "kind": None}
        except (protocol.ProtocolError, shared_memory.SharedMemoryError) as error:
            return {"ok": True, "kind": "wrong_type", "detail": f"unreadable outputs: {error}"}
        finally:
            if batch is not None:
                batch[0].release()
            for run_specs in request.get("files") or []:
                _remove(where, run_specs)

    def judge_collected(self, request: dict) -> dict:
        """Judges collected outputs (`collect`) against the reference on the inputs of the
        timed run they came from: the case's inputs from `seed`, as run `run` of the timing
        seeded with `runs_seed` was given them (`timing.inputs_of_run`)."""
        task = request["task"]
        actual = self.collected.pop(request["token"])
        inputs = task.make_inputs(request["params"], request["seed"], self.device.torch_device)
        inputs = timing.inputs_of_run(inputs, request["runs_seed"], request["run"])
        expected = checking.as_list(task.reference(*inputs))
        entry = _Prepared(None, expected, (request["seed"], request["run"]), [], None)
        return self._verdict(task, entry, actual, [])

    def discard(self, request: dict) -> dict:
        """Drops prepared inputs that were never compared (a timing's)."""
        for token in request["tokens"]:
            entry = self.prepared.pop(token, None)
            if entry is not None:
                entry.drop()
        return {"ok": True}

    def read_clock(self, request: dict) -> dict:
        """Reads the SM clock (`timing.read_clock_mhz`; None where it cannot be read): a read
        no candidate can touch, for the judge's window of the device's recent clocks."""
        return {"ok": True, "mhz": timing.read_clock_mhz(self.device)}

    def _baseline(self, task):
        """Returns the task's baseline entry point, imported from a file in this process's
        own directory (Triton's @jit reads its kernels' source from the file)."""
        if task.name not in self.baselines:
            name = f"baseline_{task.name}"
            path = os.path.abspath(f"{name}.py")
            with open(path, "w") as handle:
                handle.write(task.baseline_source)
            module = modules.import_file(path, name)
            self.baselines[task.name] = getattr(module, task.entry_point)
        return self.baselines[task.name]

    def warm_baseline(self, request: dict) -> dict:
        """Compiles the task's baseline for every case, on stand-ins in each case's input
        layout (`request["cases"]`, as `describe` gives them), launching nothing
        (`compile_only`): it runs while a candidate is timed. Calling it on real inputs
        did device work beside that timing (the inputs made, each kernel run, an autotuner's
        benchmarks), which slowed it (evidence: RESULTS.md#baseline-compile-only). What fails
        here is only reported: staging compiles it again, holding the device shared."""
        stopped = compile_only.compile_cases(self._baseline(request["task"]), request["cases"],
                                             self.launches, self.device.torch_device)
        shared_memory.return_cached_memory(self.device.backend)
        return {"ok": True, "stopped": stopped}

    def stage_baseline(self, request: dict) -> dict:
        """Makes each case's buffers and stages the baseline on them (`timing.stage`: warm-up,
        capture) beside other work; `time_baseline` then times what was staged."""
        task = request["task"]
        baseline = self._baseline(task)
        self.staged_baseline = []
        for params, seed in request["cases"]:
            with timing.phase("buffers"):
                buffers, refill = timing.refilled_copies(
                    task.make_inputs(params, seed, self.device.torch_device), seed)
            floors = timing.case_floors_us(self.device, task.flops, task.bytes, params)
            staged = timing.stage([lambda b=buffers: baseline(*b)], self.device,
                                  request.get("timing"), refill)
            self.staged_baseline.append((staged, floors))
        return {"ok": True}

    def time_baseline(self, request: dict) -> dict:
        """Times the staged baseline cases with the candidates' protocol (the device held
        alone by the caller; `peak_mhz`: the clock to wait for, see `timing.time_staged`)."""
        staged, self.staged_baseline = self.staged_baseline, []
        peak = request.get("peak_mhz", 0.0)
        with timing.one_callers_cases():
            results = [timing.time_staged(ready, floors_us=[floors], peak_mhz=peak)[0].__dict__
                       for ready, floors in staged]
        staged.clear()  # the graphs and buffers go before the cache is handed back
        shared_memory.return_cached_memory(self.device.backend, shared_memory.LARGE_CACHE_BYTES)
        return {"ok": True, "cases": results}


def _digest(outputs: list) -> tuple:
    """Returns a fingerprint of outputs' exact bytes: an earlier call's output returned again
    is found without keeping every output of the walk in memory."""
    return tuple((str(t.dtype), tuple(t.shape), _fingerprint(t)) for t in outputs)


def _fingerprint(tensor) -> str:
    """SHA-256 of the bytes on the host; on a GPU (where outputs from a shared buffer stay)
    a position-weighted sum of the 32-bit words, computed there instead of copying them
    out: equal only for equal bytes, short of a deliberate collision, and this only labels
    an output that already failed."""
    raw = tensor.contiguous().view(-1).view(torch.uint8)
    if not raw.is_cuda:
        return hashlib.sha256(memoryview(raw.numpy())).hexdigest()
    words = (raw.view(torch.int32) if raw.numel() % 4 == 0 else raw).to(torch.int64)
    weights = torch.arange(words.numel(), device=words.device) % 1_000_003 + 1
    return f"{int((words * weights).sum())}:{int(words.sum())}"


def _remove(directory: str, specs) -> None:
    for spec in specs if isinstance(specs, list) else []:
        name = spec.get("file") if isinstance(spec, dict) else None
        if isinstance(name, str) and "/" not in name and not name.startswith("."):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _timed(handler):
    """Returns `handler` whose reply also says where its seconds went here ("spent_s"):
    the steps it timed (`timing.phase`), "all" of them (set against the request's round
    trip: what transit adds), "cpu" (this thread on a core in user mode: work, and a
    synchronisation's spin), "system" (in the kernel: the driver's calls), "queued" (ready
    but waiting for a core, from /proc's schedstat where there is one). The rest of "all"
    is time blocked: on the device or in the driver."""
    def run(request: dict) -> dict:
        spent: dict = {}
        queued, used = _queued_s(), resource.getrusage(resource.RUSAGE_THREAD)
        with timing.accounted(spent):
            reply = handler(request)
        now = resource.getrusage(resource.RUSAGE_THREAD)
        spent.update(cpu=now.ru_utime - used.ru_utime, system=now.ru_stime - used.ru_stime)
        if queued is not None:
            spent["queued"] = (_queued_s() or 0.0) - queued
        return {**reply, "spent_s": spent}

    return run


def _queued_s() -> float | None:
    """Returns the seconds this thread has waited on a run queue, ready to run (schedstat's
    second field), or None where the kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat") as stats:
            return int(stats.read().split()[1]) * 1e-9
    except (OSError, IndexError, ValueError):
        return None


def _serve(request_fd: int, reply_fd: int, channel: socket.socket | None) -> None:
    def start(init: dict) -> tuple[dict, dict]:
        checker = Checker(init, channel)
        checker.launches.install()
        checker.warm_up()
        return ({"reset": checker.reset, "prepare": _timed(checker.prepare),
                 "compare": _timed(checker.compare), "discard": checker.discard,
                 "collect": _timed(checker.collect), "batch_slots": checker.batch_slots,
                 "judge_collected": _timed(checker.judge_collected),
                 "read_clock": checker.read_clock, "describe": checker.describe,
                 "warm_baseline": checker.warm_baseline,
                 "stage_baseline": _timed(checker.stage_baseline),
                 "time_baseline": _timed(checker.time_baseline)},
                {"shares": checker.shares})

    def on_error(error: BaseException) -> dict:  # a broken task or reference: the harness's
        # fault, unless the shared device ran out of memory (`walk.RETRIED_FAILURES`)
        kind = "out_of_memory" if isinstance(error, torch.OutOfMemoryError) else "harness_error"
        return {"ok": False, "kind": kind,
                "trace": "".join(traceback.format_exception(error))[-4000:]}

    protocol.serve(request_fd, reply_fd, start, on_error, pickled=True)


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[3])) if len(sys.argv) > 3 else None
    _serve(int(sys.argv[1]), int(sys.argv[2]), channel)
    os._exit(0)


if __name__ == "__main__":
    main()
