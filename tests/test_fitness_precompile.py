"""A candidate compiles before its first call, on stand-ins of the inputs, launching nothing.

`Worker.precompile` runs the entry point inside `LaunchCounter.compiling_only`, so the
engine can let it run while another candidate is timed; what the candidate does there is
never a verdict. These tests hold its promises: no launch (and no autotune choice made from
launches that never happened), stand-ins in the real layout, an exception there that ends
only the precompile, and one description of a task's inputs for all its candidates.
"""

import concurrent.futures
import json
import os
import subprocess
import sys

import pytest
import torch
from triton.runtime._async_compile import FutureKernel

from benchmarks.registry import builtin
from evo.records import make_candidate
from fitness.processes import protocol
from fitness.measure.compile_only import ready_to_launch, stand_ins
from fitness.device import DeviceInfo
from fitness import Evaluator, Settings
from fitness.processes.pool import WorkerPool
from fitness_limits import FITNESS_TEST_LIMITS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMPILING_ONLY = '''
import json, torch, triton, triton.language as tl
from fitness.measure.launches import LaunchCounter

counter = LaunchCounter()
counter.install()


@triton.jit
def fill(out_ptr, value, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.zeros([BLOCK], tl.float32) + value)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
                 do_bench=lambda call, quantiles: (call(), [1.0, 1.0, 1.0])[1])
@triton.jit
def tuned_fill(out_ptr, value, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.zeros([BLOCK], tl.float32) + value, mask=offsets < n)


out = torch.zeros(16)
with counter.compiling_only():
    fill[(1,)](out, 1.0, BLOCK=16)
    tuned_fill[(1,)](out, 2.0, 8)
report = {"compiling": [counter.count, out.tolist(), len(tuned_fill.cache)]}
fill[(1,)](out, 1.0, BLOCK=16)
tuned_fill[(1,)](out, 2.0, 8)
report["launching"] = [counter.count, out.tolist(), len(tuned_fill.cache)]
print(json.dumps(report))
'''


def test_compiling_only_launches_nothing_and_leaves_no_autotune_choice(tmp_path):
    """In a process of its own (the counter patches Triton's classes for good)."""
    script = tmp_path / "compiling_only.py"  # Triton reads a kernel's source from its file
    script.write_text(COMPILING_ONLY)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])

    assert report["compiling"] == [0, [0.0] * 16, 0]  # nothing ran, no config was chosen
    # afterwards both launch: the tuner times its two configs (two launches) and keeps one
    launches, values, choices = report["launching"]
    assert launches == 4 and choices == 1
    assert values == [2.0] * 8 + [1.0] * 8


def test_stand_ins_keep_each_input_layout_and_pass_scalars_through():
    storage = torch.arange(40, dtype=torch.float16)
    view = torch.as_strided(storage, (3, 4), (1, 3), 5)  # transposed, at an offset
    indices = torch.tensor([3, 1, 2], dtype=torch.int64)
    layouts = json.loads(json.dumps(protocol.layouts([view, indices, 7, 0.5])))

    stand_in_view, stand_in_indices, n, scale = stand_ins(layouts, "cpu")

    assert (stand_in_view.dtype, stand_in_view.shape, stand_in_view.stride()) == (
        torch.float16, (3, 4), (1, 3))
    assert stand_in_view.storage_offset() == 5
    assert stand_in_view.untyped_storage().nbytes() == 2 * (5 + 2 * 1 + 3 * 3 + 1)  # its span
    assert (stand_in_indices.dtype, stand_in_indices.shape) == (torch.int64, (3,))
    assert (n, scale) == (7, 0.5)


FAILS_ON_ITS_FIRST_INVOCATION = '''

_invocations = []


def vector_add(x, y):
    _invocations.append(1)
    if len(_invocations) == 1:
        raise RuntimeError("only the first invocation fails")
    return _baseline(x, y)
'''


def test_an_exception_on_stand_ins_ends_the_precompile_not_the_worker(tmp_path):
    """(The static gate would refuse this module's global state before it reached a worker;
    here the worker is asked directly.)"""
    task = builtin().get("vector_add")
    source = task.baseline_source.replace(f"def {task.entry_point}(", "def _baseline(")
    layouts = protocol.layouts(task.make_inputs(task.interpreter_cases[0].params, 1, "cpu"))
    pool = WorkerPool(DeviceInfo("interpreter", "cpu-interpreter"), 1, "candidate", str(tmp_path))
    try:
        with pool.lease() as worker:
            loaded = worker.request({"op": "load", "source": source + FAILS_ON_ITS_FIRST_INVOCATION,
                                     "entry_point": "vector_add", "arity": 2, "stall_s": 3.0}, 60)
            first = worker.request({"op": "precompile", "cases": [layouts, layouts]}, 60)
            second = worker.request({"op": "precompile", "cases": [layouts]}, 60)
    finally:
        pool.close()

    assert loaded["ok"] and first["ok"] and second["ok"]
    assert "only the first invocation fails" in first["stopped"]
    assert second["stopped"] is None


@pytest.mark.slow
def test_a_walk_precompiles_and_the_inputs_are_described_once_per_task():
    task = builtin().get("vector_add")
    with Evaluator(Settings(device="interpreter", workers=1,
                            timeouts=FITNESS_TEST_LIMITS)) as evaluator:
        evaluations = [evaluator.evaluate(task, make_candidate(
            task.name, f"{task.baseline_source}\n_COPY = {i}\n")) for i in range(2)]
        requests = evaluator.stats()["requests"]

    assert all(e.correct for e in evaluations), [e.error_trace[-800:] for e in evaluations]
    # the two candidates' and the baseline's (loaded in a worker of its own), one description
    assert requests["candidate.precompile"] == 3 and requests["checker.describe"] == 1


class _Compiled:
    """What a GPU build's compile-only launch returns, reduced to the one call readying
    makes (the interpreter compiles nothing, so these tests cannot get a real one)."""

    def __init__(self, fails: bool = False):
        self.readied, self.fails = 0, fails

    def _init_handles(self):
        self.readied += 1
        if self.fails:
            raise RuntimeError("out of resources: shared memory")


def _future_of(kernel):
    future = concurrent.futures.Future()
    if kernel is None:
        future.set_exception(RuntimeError("the compile failed"))
    else:
        future.set_result(kernel)
    wrapped = FutureKernel(lambda _: None, lambda _: None, future)
    wrapped.result(ignore_errors=True)  # what leaving Triton's AsyncCompileMode does
    return wrapped


def test_precompiled_kernels_are_readied_for_their_first_launch_and_failed_compiles_skipped():
    direct, awaited = _Compiled(), _Compiled()
    ready_to_launch([direct, _future_of(awaited), _future_of(None), None])
    assert (direct.readied, awaited.readied) == (1, 1)
    with pytest.raises(RuntimeError, match="shared memory"):  # the precompile stops there
        ready_to_launch([_Compiled(fails=True)])
