"""Where a correctness call's trusted seconds go: the checker's prepare and compare, by step.

Every correctness call of a walk is one shared hold of the device from the checker's
`prepare` (inputs from a seed, a pristine copy, the reference, the shared buffer the worker
maps) to its `compare`; a timing run waits for such holds to end (issue 12: the drain), and
the pool's walks spend most of their device holds in them. This runs the real
`fitness.judge.checker.Checker` in this process (trusted code) on every case of every
built-in task, and splits each step's wall time with a device synchronisation after each:
making the inputs, the pristine copy, the reference, allocating and mapping the shared
buffer, packing the inputs into it, exporting its descriptor, and then the compare (the
reference's outputs put in the output slots, as an honest worker would). The first round
pays the caching allocator's growth and the reference's compilation; later rounds are the
steady state.

    python experiments/perf/prepare_profile.py --rounds 3
    python experiments/perf/prepare_profile.py --device interpreter --tasks vector_add
"""

from __future__ import annotations

import argparse
import collections
import os
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from benchmarks.registry import builtin  # noqa: E402
from fitness import shared_memory  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import checking  # noqa: E402
from fitness.judge.checker import Checker  # noqa: E402

STEPS = ("inputs", "pristine", "reference", "allocate", "pack", "export", "prepare",
         "compare")
"""The parts of a prepare measured one by one, then the whole `Checker.prepare` and
`Checker.compare` as the checker runs them."""


def _timer(device):
    """Returns measure(fn) -> (fn's result, its ms), the device synchronised on both ends."""
    import torch

    def sync() -> None:
        if device.backend != "interpreter":
            torch.cuda.synchronize()

    def measure(fn):
        sync()
        began = time.perf_counter()
        result = fn()
        sync()
        return result, (time.perf_counter() - began) * 1e3

    return measure


def profile_case(checker: Checker, task, params: dict, seed: int, measure, peer,
                 scratch: str) -> dict:
    """Returns ms per step (STEPS) for one case and seed."""
    import torch

    spent = {}
    inputs, spent["inputs"] = measure(lambda: task.make_inputs(params, seed,
                                                                checker.device.torch_device))
    _, spent["pristine"] = measure(lambda: [t.clone() if isinstance(t, torch.Tensor) else t
                                            for t in inputs])
    expected, spent["reference"] = measure(lambda: checking.as_list(task.reference(*inputs)))
    del inputs
    share = checker.shares
    if share:
        total = sum(t.numel() * t.element_size() for t in expected)
        buffer, spent["allocate"] = measure(lambda: shared_memory.SharedBuffer.create(
            max(total, 1), torch.cuda.current_device()))
        buffer.release()
    request = {"task": task, "params": params, "seed": seed, "dir": scratch,
               "prefix": "p", "token": "p", "expect": True, "check_inputs": True,
               "share": share}
    if share:
        inputs = task.make_inputs(params, seed, checker.device.torch_device)
        slot_bytes = [t.numel() * t.element_size() for t in expected]
        (buffer, _), spent["pack"] = measure(lambda: shared_memory.pack(
            inputs, slot_bytes, shared_memory.allocator(torch.cuda.current_device())))
        fd, spent["export"] = measure(buffer.export)
        os.close(fd)
        buffer.release()
        del inputs
    reply, spent["prepare"] = measure(lambda: checker.prepare(request))
    if share:
        os.close(shared_memory.receive_fd(peer, "p", 5.0))
        entry = checker.prepared["p"]
        outputs = shared_memory.fill_slots(entry.shared, entry.slots, expected)
        _, spent["compare"] = measure(lambda: checker.compare(
            {"task": task, "token": "p", "dir": scratch, "outputs": outputs,
             "inputs_after": []}))
    else:
        checker.discard({"tokens": ["p"]})
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    device = detect(args.device)
    registry = builtin()
    names = [n for n in args.tasks.split(",") if n]
    tasks = [registry.get(n) for n in names] if names else registry.tasks()
    ours, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    checker = Checker({"device": device}, ours)
    scratch = tempfile.mkdtemp(prefix="prepare-profile-")
    measure = _timer(device)
    print(f"device: {device.name} ({device.backend}); shared buffers: {checker.shares}; "
          f"rounds: {args.rounds} (the first is not in the table)")
    totals = collections.defaultdict(list)  # step -> ms over steady-state cases
    print("| task case | " + " | ".join(STEPS) + " |")
    print("|---|" + "---|" * len(STEPS))
    for task in tasks:
        for case in task.cases_for(device.backend):
            rounds = [profile_case(checker, task, case.params, 1000 + at, measure, peer, scratch)
                      for at in range(args.rounds)]
            checker.reset({})
            steady = rounds[1:] or rounds
            row = {step: statistics.median(r[step] for r in steady)
                   for step in STEPS if step in steady[0]}
            for step, ms in row.items():
                totals[step].append(ms)
            print(f"| {task.name} {case.name} | " + " | ".join(
                f"{row[step]:.2f}" if step in row else "-" for step in STEPS) + " |", flush=True)
    print("\nsteady state, ms per call, mean over cases: " + ", ".join(
        f"{step} {statistics.mean(values):.2f}" for step, values in totals.items()))


if __name__ == "__main__":
    main()
