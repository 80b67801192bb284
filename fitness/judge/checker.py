"""The checker: a trusted process that makes inputs, runs references, compares, and holds the clock.

Started by `fitness.processes.pool` (unsandboxed: it never imports a candidate) as
`python -m fitness.judge.checker REQ REPLY [CHANNEL]`. One walk of the cascade leases one checker for
its whole duration: `prepare` makes a case's inputs from a seed the candidate has not seen,
hands them over (a GPU buffer this process owns, lent by descriptor, or raw files in the
worker's read-only input directory) and keeps the reference's outputs and a pristine copy
of the inputs here; `compare` reads what the worker put back (raw values only, every spec
validated) and returns the verdict. A timed case's batches are made, released, timed (on a
GPU, by this process's own events: `timed_batch`) and judged here too; candidates and
baselines alike run in workers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import resource
import socket
import sys
import traceback

import torch

from fitness.processes import host_words, protocol
from fitness.processes import shared_memory
from fitness.measure import timing
from fitness.measure.launches import LaunchCounter
from benchmarks.external import common, recorded
from fitness.judge import checking, fenced
from fitness.judge.timed_batch import FillCut, TimedBatch, remove_files

@dataclasses.dataclass
class _Prepared:
    """One prepared call: what the judge keeps, and where the worker's copy lives."""

    pristine: list | None  # a copy of the inputs, when the judge checks they stay unchanged
    expected: list  # the reference's outputs
    seed: int  # the inputs' seed
    specs: list  # file specs (raw-file transport), or the shared buffer's layout values
    input_dir: str | None
    shared: shared_memory.SharedBuffer | None = None
    slots: list | None = None

    def drop(self) -> None:
        """Frees what the call held: the shared buffer here, or the input files."""
        if self.shared is not None:
            self.shared.release()
        elif self.input_dir is not None:
            remove_files(self.input_dir, self.specs)


class Checker:
    """Per-walk state: prepared calls (token -> _Prepared) and what spots replays."""

    def __init__(self, request: dict, channel: socket.socket | None):
        self.torch = torch
        self.device = request["device"]
        self.channel = channel
        self.shares = channel is not None and shared_memory.available(self.device.backend)
        self.prepared: dict[str, _Prepared] = {}
        self.last_call: tuple[tuple, list] | None = None  # (seed, outputs): the cascade repeats
        # a seed right after its first call, to check determinism
        self.output_digests: set[tuple] = set()  # every earlier output, to spot replays
        self.timed: dict[str, TimedBatch] = {}  # token -> a timed case's batches
        # References run here for their outputs, which every config of an autotuner computes
        # within the task's tolerance: one config each, benchmarking none, as a suite's
        # reference run in its harness does. An external reference that tuned every shape in
        # every checker ran its benchmarks on the device beside other walks' timed runs
        # (RESULTS.md §40; `LaunchCounter.one_config`).
        launches = LaunchCounter()
        launches.one_config = True
        launches.install()

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
        self.last_call = None
        self.output_digests.clear()
        for batch in self.timed.values():
            batch.close()
        self.timed.clear()
        shared_memory.return_cached_memory(self.device.backend)
        return {"ok": True}

    def prepare(self, request: dict) -> dict:
        """Makes a call's inputs from `seed` and hands them over: in a shared GPU buffer
        whose descriptor goes to the engine (`share`), or as files in the worker's input
        directory. Keeps the reference's outputs and, if asked, a pristine copy."""
        task, seed = request["task"], request["seed"]
        with timing.phase("make"):  # launches; the device runs them by the pack's end
            inputs = task.make_inputs(request["params"], seed, self.device.torch_device)
            pristine = None
            if request.get("check_inputs"):  # the judge, not the worker, decides what is checked
                pristine = [t.clone() if isinstance(t, self.torch.Tensor) else t for t in inputs]
        with timing.phase("reference"):  # launches too
            expected = fenced.reference_outputs(task, inputs)
        token = request["token"]
        if request.get("share") and self.shares:
            slot_bytes = [t.numel() * t.element_size() for t in expected]
            allocate = shared_memory.allocator(self.torch.cuda.current_device())

            def allocate_timed(nbytes: int) -> shared_memory.SharedBuffer:
                with timing.phase("allocate"):
                    return allocate(nbytes)

            with timing.phase("pack"):
                buffer, layout = shared_memory.pack(inputs, slot_bytes, allocate_timed)
            self.prepared[token] = _Prepared(pristine, expected, seed, layout["values"],
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
            self.prepared[token] = _Prepared(pristine, expected, seed, specs, request["dir"])
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

    def record(self, request: dict) -> dict:
        """Records the calls an external suite's timing code makes (`calls.record`, e.g.
        `benchmarks.external.recorded.PerformanceCalls`): the suite's code and its reference
        module run here, on the trusted side; a candidate's never does. "undefined": the
        inputs on which the reference's outputs depend on more than the inputs
        (`fenced.undefined_inputs`), with why; "unwritten": those on which it leaves part of
        them unwritten. "faulted_at": the reference's own run raised on that input
        (`recorded.InputFault`), past the first."""
        calls = request["calls"]
        try:
            reply = calls.record(self.device.torch_device, request["count"])
        except recorded.InputFault as fault:
            if fault.at == 0:  # no input runs: the timing code failed, as before
                raise fault.error from None
            # "fatal": a device fault leaves this checker's context unusable, and the
            # inputs before it are recorded again in a fresh one (`performance_inputs`)
            return {"ok": True, "faulted_at": fault.at, "fault": str(fault)[:2000],
                    "fatal": protocol.poisons_context(fault.error)}
        if "calls" in reply:
            reply["undefined"], reply["unwritten"] = fenced.undefined_inputs(
                common.with_recorded(calls, reply["calls"]), self.device.torch_device,
                request["task"].tolerance)
        shared_memory.return_cached_memory(self.device.backend, shared_memory.LARGE_CACHE_BYTES)
        return {"ok": True, **reply}

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
            remove_files(where, request["outputs"])
            remove_files(where, request["inputs_after"])

    def _verdict(self, task, entry: _Prepared, actual: list, after: list) -> dict:
        pristine, expected, seed = entry.pristine, entry.expected, entry.seed
        if task.unwritten_free:
            actual = checking.unwritten_freed(expected, actual)
        verdict = checking.compare_outputs(expected, actual, task.tolerance)
        if verdict["kind"] is None and pristine is not None:
            modified = [i for i, (before, now) in enumerate(zip(pristine, after))
                        if isinstance(before, self.torch.Tensor) and i not in task.written
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

    def timed_open(self, request: dict) -> dict:
        """Makes a timed case's batches (`TimedBatch`, under `token`): with `share`, a buffer
        and a page of host words lent to the worker (their descriptors go to the engine);
        replies with the runs per batch and the buffer's layout."""
        token = request["token"]
        share = bool(request.get("share")) and self.shares
        batch = self.timed[token] = TimedBatch(request["task"], request["params"],
                                               request["runs"], self.device, share,
                                               request.get("dir"))
        if not share:
            return {"ok": True, "runs": batch.runs}
        for lent, tag in ((batch.buffer, token), (batch.words, token + host_words.TAG)):
            with timing.phase("export"):
                fd = lent.export()
            try:
                shared_memory.send_fd(self.channel, fd, tag)
            finally:
                os.close(fd)
        return {"ok": True, "runs": batch.runs, "shared": batch.share()}

    def timed_files(self, request: dict) -> dict:
        """Interpreter: writes one batch's fresh inputs as files (`TimedBatch.write_files`)."""
        return {"ok": True, "runs": self.timed[request["token"]].write_files(request["prefix"])}

    def timed_release(self, request: dict) -> dict:
        """GPU: one batch by the judge's clock (`TimedBatch.release`); replies with the
        microseconds from `go` to `done` and the fill's GB/s (for the meter), the timeout,
        or the fills another context cut."""
        batch = self.timed[request["token"]]
        try:
            elapsed_us = batch.release(request["go"], request["limit_s"],
                                       request.get("cut_fails", True), request["turn"])
        except TimeoutError as error:
            return {"ok": True, "timeout": str(error)}
        except FillCut as error:
            return {"ok": True, "fill_cut": str(error)}
        return {"ok": True, "elapsed_us": elapsed_us, "fill_gbps": batch.fill_gbps()}

    def timed_quiet(self, request: dict) -> dict:
        """GPU: waits for the device to be quiet before a case's batches (`TimedBatch.quiet`)."""
        return {"ok": True, **self.timed[request["token"]].quiet(request["limit_s"])}

    def timed_judge(self, request: dict) -> dict:
        """Judges the last batch (`TimedBatch.judge`)."""
        verdict = self.timed[request["token"]].judge(request["outputs"], request.get("dir"))
        return {"ok": True, **verdict}

    def timed_close(self, request: dict) -> dict:
        batch = self.timed.pop(request["token"], None)
        if batch is not None:
            batch.close()
        with timing.phase("uncache"):
            shared_memory.return_cached_memory(self.device.backend, shared_memory.LARGE_CACHE_BYTES)
        return {"ok": True}


FINGERPRINT_CHUNK = 1 << 26
"""Words of an output `_fingerprint` weighs at a time: its int64 copies of a whole 8-GB output
(ksoftmax_triton's largest) ran a checker out of memory
(evidence: RESULTS.md#huge-case-memory)."""


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
    return weighted_words(raw.view(torch.int32) if raw.numel() % 4 == 0 else raw)


def weighted_words(words, chunk: int = FINGERPRINT_CHUNK) -> str:
    """Returns "sum(word x (position mod 1,000,003 + 1)):sum(word)" over the flat `words`,
    both modulo 2^64, weighed `chunk` words at a time in int64 (whose sums wrap modulo 2^64
    alike however the words are split)."""
    weighted = total = 0
    for start in range(0, words.numel(), chunk):
        part = words[start:start + chunk].to(torch.int64)
        weights = torch.arange(start, start + part.numel(), device=part.device) % 1_000_003 + 1
        weighted = (weighted + int((part * weights).sum())) % 2**64
        total = (total + int(part.sum())) % 2**64
    return f"{weighted}:{total}"


def _settled(handler):
    """Returns `handler` that waits for this process's device work before it replies: a
    fault of a kernel the request launched (a reference's illegal memory access) fails that
    request, the task that caused it, and not the next one this checker serves, which the
    fault would reach at its first device call (RESULTS.md §30)."""
    def run(request: dict) -> dict:
        reply = handler(request)
        if torch.cuda.is_initialized():
            torch.cuda.synchronize()
        return reply

    return run


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
        checker.warm_up()
        handlers = {"reset": checker.reset, "prepare": _timed(checker.prepare),
                    "compare": _timed(checker.compare),
                    "describe": checker.describe, "record": checker.record,
                    "timed_open": _timed(checker.timed_open),
                    "timed_files": _timed(checker.timed_files),
                    "timed_release": checker.timed_release,
                    "timed_quiet": _timed(checker.timed_quiet),
                    "timed_judge": _timed(checker.timed_judge), "timed_close": checker.timed_close}
        return {op: _settled(handler) for op, handler in handlers.items()}, {"shares": checker.shares}

    protocol.serve(request_fd, reply_fd, start, error_reply, pickled=True)


def error_reply(error: BaseException) -> dict:
    """The checker's reply to a request that raised: a broken task or reference, the
    harness's fault, unless the shared device ran out of memory (`walk.RETRIED_FAILURES`).
    An error that poisons the device context is "fatal": the checker ends after the reply
    and the pool starts a fresh one. A pooled checker that went on failed every later task
    it served with the same illegal memory access (RESULTS.md §30)."""
    out_of_memory = isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, shared_memory.SharedMemoryError) and error.out_of_memory)
    kind = "out_of_memory" if out_of_memory else "harness_error"
    return {"ok": False, "kind": kind, "fatal": protocol.poisons_context(error),
            "trace": "".join(traceback.format_exception(error))[-4000:]}


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[3])) if len(sys.argv) > 3 else None
    _serve(int(sys.argv[1]), int(sys.argv[2]), channel)
    os._exit(0)


if __name__ == "__main__":
    main()
