"""Where a timed case's capture goes: the worker's `timed_capture` records up to `MAX_RUNS`
runs of the candidate under its instruments into a CUDA graph, and took 0.43-0.5 s a case
on an H200 (RESULTS.md#capture-hold), about 15 ms a run for a kernel that launches once.

This script builds a real `Worker` in its own process (no sandbox: the candidate is a
built-in baseline), loads the baseline, and times the same runs with one part added at a
time: the entry point bare, under the worker's launch counter and watches (always
installed), with the `Arena`, with the `OpRecorder`, and the worker's own `_timed_call`;
each eagerly and under capture where the device has graphs. Then the whole of it under
cProfile, its top functions printed.

    python experiments/perf/capture_bisect.py --device cuda --task vector_add --runs 32
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import tempfile
import time

import torch

from benchmarks import registry
from fitness import device as devices
from fitness.judge import clock
from fitness.sandbox import worker as worker_module
from fitness.sandbox.instrument import OpRecorder
from fitness.sandbox.timed import Arena


def _timed(label: str, body, runs: int, capturing: bool, stream) -> float:
    """Returns the seconds `body(run)` for every run took, inside a graph capture when
    `capturing` (the capture ended, its graph dropped), and prints them."""
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    began = time.perf_counter()
    if capturing:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            graph.capture_begin(capture_error_mode="global")
            try:
                for run in range(runs):
                    body(run)
            finally:
                graph.capture_end()
    else:
        for run in range(runs):
            body(run)
    spent = time.perf_counter() - began
    print(f"{label:<44} {'capture' if capturing else 'eager':<8} {spent * 1e3:9.1f} ms "
          f"{spent * 1e3 / runs:8.2f} ms/run", flush=True)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--task", default="vector_add")
    parser.add_argument("--case", type=int, default=0, help="index of the task's case")
    parser.add_argument("--runs", type=int, default=clock.MAX_RUNS)
    args = parser.parse_args()

    info = devices.detect(args.device)
    task = registry.builtin().get(args.task)
    case = (task.cases if info.backend != "interpreter" else task.interpreter_cases)[args.case]
    os.chdir(tempfile.mkdtemp(prefix="capture-bisect-"))  # the worker writes its module here
    worker = worker_module.Worker({"device": info.__dict__}, None)
    loaded = worker.load({"source": task.baseline_source, "entry_point": task.entry_point,
                          "arity": len(task.make_inputs(task.interpreter_cases[0].params, 0, "cpu")),
                          "stall_s": None})
    assert loaded["ok"], loaded
    where = info.torch_device
    sets = [task.make_inputs(case.params, seed, where) for seed in range(args.runs)]
    out_bytes = sum(v.numel() * v.element_size() for v in sets[0] if isinstance(v, torch.Tensor))
    regions = [torch.empty(out_bytes + (1 << 20), dtype=torch.uint8, device=where)
               for _ in range(args.runs)]
    entry = worker.entry
    timed_call = worker._timed_call(worker_module._Observed())
    for _ in range(2):  # warm, as `TimedCase.warm_up`
        entry(*sets[0])
    graphs = info.backend == "cuda"
    stream = torch.cuda.Stream() if graphs else None
    print(f"{task.name} case {case.name!r}, {args.runs} runs, device {info.name}", flush=True)

    def with_arena(run):
        with Arena(regions[run]):
            return entry(*sets[run])

    def with_recorder(run):
        with OpRecorder(worker.launches, poison=False, defer=True):
            return entry(*sets[run])

    variants = {
        "entry point (launch counter, watches)": lambda run: entry(*sets[run]),
        "+ Arena": with_arena,
        "+ OpRecorder(defer)": with_recorder,
        "worker._timed_call (both, observed)": lambda run: timed_call(sets[run], Arena(regions[run]),
                                                                     True),
    }
    for label, body in variants.items():
        for capturing in (False, True) if graphs else (False,):
            _timed(label, body, args.runs, capturing, stream)
    profile = cProfile.Profile()
    profile.enable()
    _timed("worker._timed_call under cProfile", variants["worker._timed_call (both, observed)"],
           args.runs, graphs, stream)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
    print(text.getvalue(), flush=True)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(20)
    print(text.getvalue(), flush=True)


if __name__ == "__main__":
    main()
