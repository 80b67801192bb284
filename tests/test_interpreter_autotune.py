"""`@triton.autotune` on the CPU interpreter: scored with each config launched once, the first
kept (fitness/sandbox/interpreter_autotune.py); a GPU worker keeps Triton's benchmarker."""

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

if sys.argv[1] == "fixed":
    interpreter_autotune.install("interpreter")
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


def test_a_gpu_worker_keeps_tritons_benchmarker():
    from triton.runtime import autotuner

    before = autotuner.Autotuner.__dict__["do_bench"]
    for backend in ("cuda", "rocm"):
        interpreter_autotune.install(backend)
    assert autotuner.Autotuner.__dict__["do_bench"] is before
