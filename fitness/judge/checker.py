"""The checker: a trusted process that makes inputs, runs references, compares, times baselines.

Started by `fitness.pool` (unsandboxed: it never imports a candidate) as
`python -m fitness.judge.checker REQ REPLY`. One walk of the cascade leases one checker for
its whole duration: `prepare` makes a case's inputs from a seed the candidate has not seen,
writes them as raw files into the worker's read-only input directory and keeps the
reference's outputs and a pristine copy of the inputs here; `compare` reads what the worker
wrote (raw bytes only, every spec validated) and returns the verdict. Baselines are timed
here too, with the same timing code the worker uses, so a candidate can neither see nor
slow nor cache the number it is compared against.
"""

from __future__ import annotations

import hashlib
import os
import sys
import traceback

import torch

from fitness import protocol
from fitness.judge import checking


class Checker:
    """Per-walk state: prepared calls (token -> pristine inputs, expected outputs, seed)."""

    def __init__(self, request: dict):
        from fitness import timing

        timing.bind_clocks()
        self.torch = torch
        self.device = request["device"]
        self.prepared: dict[str, tuple] = {}
        self.last_call: tuple[int, list] | None = None  # (seed, outputs): the cascade repeats
        # a seed right after its first call, to check determinism
        self.output_digests: set[tuple] = set()  # every earlier output, to spot replays
        self.baselines: dict[str, object] = {}

    def reset(self, request: dict) -> dict:
        """Forgets the last walk (a new candidate starts)."""
        self.prepared.clear()
        self.last_call = None
        self.output_digests.clear()
        return {"ok": True}

    def prepare(self, request: dict) -> dict:
        task, seed = request["task"], request["seed"]
        inputs = task.make_inputs(request["params"], seed, self.device.torch_device)
        specs = protocol.write_values(request["dir"], request["prefix"], inputs)
        pristine = expected = None
        if request.get("check_inputs"):  # the judge, not the worker, decides what is checked
            pristine = [t.clone() if isinstance(t, self.torch.Tensor) else t for t in inputs]
        if request.get("expect", True):  # timing variants are only discarded, never compared
            expected = checking.as_list(task.reference(*inputs))
        self.prepared[request["token"]] = (pristine, expected, seed, specs, request["dir"])
        return {"ok": True, "specs": specs}

    def compare(self, request: dict) -> dict:
        """Judges one call: outputs vs reference, inputs unchanged, determinism, replay."""
        task = request["task"]
        pristine, expected, seed, input_specs, input_dir = self.prepared.pop(request["token"])
        _remove(input_dir, input_specs)
        where = request["dir"]
        try:
            actual = protocol.read_values(where, request["outputs"], "cpu")
            after = protocol.read_values(where, request["inputs_after"], "cpu")
        except protocol.ProtocolError as error:
            return {"ok": True, "kind": "wrong_type", "detail": f"unreadable outputs: {error}"}
        finally:
            _remove(where, request["outputs"])
            _remove(where, request["inputs_after"])
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
        digest = _digest(actual)
        if verdict["kind"] == "mismatch" and digest in self.output_digests:
            verdict = {**verdict, "kind": "cheat_cached_result",
                       "detail": "a call on new inputs returned an earlier call's output "
                                 "unchanged; " + verdict.get("detail", "")}
        self.last_call = (seed, actual)
        self.output_digests.add(digest)
        return {"ok": True, "max_abs_err": 0.0, "rel_err": 0.0, "detail": "", **verdict}

    def discard(self, request: dict) -> dict:
        """Drops prepared inputs that were never compared (timing variants)."""
        for token in request["tokens"]:
            entry = self.prepared.pop(token, None)
            if entry is not None:
                _remove(entry[4], entry[3])
        return {"ok": True}

    def _baseline(self, task):
        """Returns the task's baseline entry point, imported from a file in this process's
        own directory (Triton's @jit reads its kernels' source from the file)."""
        if task.name not in self.baselines:
            import importlib.util

            name = f"baseline_{task.name}"
            path = os.path.abspath(f"{name}.py")
            with open(path, "w") as handle:
                handle.write(task.baseline_source)
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            self.baselines[task.name] = getattr(module, task.entry_point)
        return self.baselines[task.name]

    def time_baseline(self, request: dict) -> dict:
        """Times the task's trusted baseline on each case with the candidates' protocol."""
        from fitness import timing

        task = request["task"]
        baseline = self._baseline(task)
        results = []
        for params, seed in request["cases"]:
            inputs = task.make_inputs(params, seed, self.device.torch_device)
            buffers = [v.clone() if isinstance(v, self.torch.Tensor) else v for v in inputs]
            refill = timing.refiller(buffers, timing.variants(inputs))
            stats = timing.bench([lambda: baseline(*buffers)], self.device, request.get("timing"),
                                 refill)
            results.append(stats[0].__dict__)
        return {"ok": True, "cases": results}


def _digest(outputs: list) -> tuple:
    """Returns a fingerprint of outputs' exact bytes: an earlier call's output returned again
    is found without keeping every output of the walk in memory."""
    return tuple((str(t.dtype), tuple(t.shape),
                  hashlib.sha256(memoryview(t.contiguous().view(-1).view(torch.uint8).numpy())).hexdigest())
                 for t in outputs)


def _remove(directory: str, specs) -> None:
    for spec in specs if isinstance(specs, list) else []:
        name = spec.get("file") if isinstance(spec, dict) else None
        if isinstance(name, str) and "/" not in name and not name.startswith("."):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _serve(request_fd: int, reply_fd: int) -> None:
    def start(init: dict) -> dict:
        checker = Checker(init)
        return {"reset": checker.reset, "prepare": checker.prepare, "compare": checker.compare,
                "discard": checker.discard, "time_baseline": checker.time_baseline}

    def on_error(error: BaseException) -> dict:  # a broken task or reference: the harness's
        return {"ok": False, "kind": "harness_error",
                "trace": "".join(traceback.format_exception(error))[-4000:]}

    protocol.serve(request_fd, reply_fd, start, on_error, pickled=True)


def main() -> None:
    _serve(int(sys.argv[1]), int(sys.argv[2]))
    os._exit(0)


if __name__ == "__main__":
    main()
