"""`@triton.autotune` on the CPU interpreter: scored with each config launched once, the first
kept (fitness/sandbox/interpreter_autotune.py); a GPU worker keeps Triton's benchmarker; a
reference run for its outputs holds every autotuner to one config (`LaunchCounter.one_config`)."""

import os
import pathlib
import subprocess
import sys

import pytest

from benchmarks.registry import builtin
from evo.records import make_candidate
from fitness.sandbox import interpreter_autotune

REPO = pathlib.Path(__file__).parents[1]
AUTOTUNED = REPO / "tests" / "honest" / "vector_add" / "autotuned.py"  # 3 configs

# Counts the launches of an autotuned kernel with 3 configs, with and without the fix.
PROBE = """
import sys
import torch, triton, triton.language as tl
from fitness.sandbox import interpreter_autotune

@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (64, 128, 256)], key=["n"])
@triton.jit
def add_one(x_ptr, launches_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
    if tl.program_id(0) == 0:
        tl.atomic_add(launches_ptr, 1)

if sys.argv[1] != "unfixed":
    interpreter_autotune.install("interpreter")
if sys.argv[1].startswith("one config"):
    from triton.runtime.errors import OutOfResources
    from fitness.measure.launches import LaunchCounter

    def too_big(nargs):  # what a config past the device's shared memory raises at launch
        raise OutOfResources(2**20, 2**18, "shared memory")

    if sys.argv[1] == "one config, the first too big":
        add_one.configs[0].pre_hook = too_big
    if sys.argv[1] == "one config, the last with more warps":
        add_one.configs[2].num_warps = 8
    counter = LaunchCounter()
    counter.install()
    counter.one_config = True
x, launches = torch.zeros(300), torch.zeros(1, dtype=torch.int32)
try:
    add_one[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, launches, 300)
except Exception as error:
    print("error:", error)
else:
    print(int(launches.item()), add_one.best_config.kwargs["BLOCK"], int(x.max().item()))
"""


def _probe(mode: str) -> str:
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, cwd=REPO, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.slow
def test_without_the_fix_the_interpreter_cannot_autotune():
    assert "0 active drivers" in _probe("unfixed")


def test_each_config_is_launched_once_and_the_first_is_kept():
    # 3 configs tried once each, then the call itself: 4 launches; x got +1 from each.
    assert _probe("fixed") == "4 64 4"


def test_an_autotuned_candidate_is_scored_correct_by_the_evaluator(fitness_evaluator):
    task = builtin().get("vector_add")
    evaluation = fitness_evaluator.evaluate(task, make_candidate(task.name, AUTOTUNED.read_text()))
    assert evaluation.correct, f"{evaluation.failure_kind}: {evaluation.error_trace[-1500:]}"


def test_a_reference_run_launches_the_first_config_and_benchmarks_none():
    # one launch, BLOCK 64, x +1: none of the autotuner's benchmark launches happened
    assert _probe("one config") == "1 64 1"


def test_a_reference_run_skips_a_config_the_device_cannot_fit_as_the_autotuner_would():
    assert _probe("one config, the first too big") == "1 128 1"


def test_a_reference_run_takes_the_config_with_the_most_warps_the_quickest_to_compile():
    assert _probe("one config, the last with more warps") == "1 256 1"


def test_a_gpu_worker_keeps_tritons_benchmarker():
    from triton.runtime import autotuner

    before = autotuner.Autotuner.__dict__["do_bench"]
    for backend in ("cuda", "rocm"):
        interpreter_autotune.install(backend)
    assert autotuner.Autotuner.__dict__["do_bench"] is before
