"""The README's "First hour" section, run as written: its shell blocks in one `bash -e` session
from the checkout with this Python's bin first on PATH (a user's environment: no
TRITON_INTERPRET), then its Python block; each shows what the section says it shows. A block
that reads GEAK-eval (through KERNELEVO_EXTERNAL) is left out when there is no checkout, and
the test of what it shows is skipped, saying why."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import torch

import external_suites
from benchmarks import listing, registry

pytestmark = pytest.mark.slow  # a campaign and `evo eval` runs: `make test-fast` leaves it out

ROOT = pathlib.Path(__file__).resolve().parent.parent
SECTION = "First hour"
FOLDER = ROOT / "results" / "first-hour"  # where the section's commands write
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
ON_GPU = torch.cuda.is_available()
HAS_GEAK = (external_suites.folder() / "GEAK-eval").is_dir()


def section(text: str, title: str) -> str:
    """Returns the text under `## title`, up to the next heading of that level."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert found, f"README.md has no '## {title}' section"
    return found.group(1)


def blocks(text: str, language: str) -> list[str]:
    """Returns the bodies of the fenced blocks tagged `language`, in order."""
    return [body for tag, body in FENCE.findall(text) if tag == language]


def _run(command: list[str]) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env[external_suites.VARIABLE] = str(external_suites.folder())
    return subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)


@pytest.fixture(scope="module")
def first_hour():
    """Runs the section's shell blocks, then its Python block; returns both outputs."""
    text = section((ROOT / "README.md").read_text(), SECTION)
    shell, python = blocks(text, "bash"), blocks(text, "python")
    shell = [block for block in shell if HAS_GEAK or external_suites.VARIABLE not in block]
    assert shell and len(python) == 1, (f"expected bash blocks and one python block, got "
                                        f"{len(shell)} and {len(python)}")
    shutil.rmtree(FOLDER, ignore_errors=True)
    try:
        ran_shell = _run(["bash", "-e", "-c", "\n".join(shell)])
        assert ran_shell.returncode == 0, ran_shell.stdout[-4000:]
        ran_python = _run([sys.executable, "-c", python[0]])
        assert ran_python.returncode == 0, ran_python.stdout[-4000:]
    finally:
        shutil.rmtree(FOLDER, ignore_errors=True)
    return ran_shell.stdout, ran_python.stdout


def test_evo_tasks_shows_each_signature_and_where_it_runs(first_hour):
    shown, _ = first_hour
    for task in registry.builtin().tasks():
        assert listing.signature(task) in shown, task.name
    assert "cuda, rocm, interpreter" in shown


def test_evo_eval_gives_a_verdict_for_the_baseline_and_your_file(first_hour):
    shown, _ = first_hour
    for path in ("benchmarks/builtin/kernels/softmax.py", "results/first-hour/my_softmax.py",
                 "results/first-hour/best_softmax.py"):  # the last: `evo export`'s best
        assert f"{path}: correct, speedup" in shown, path
    assert ON_GPU or "(interpreter: timing not meaningful)" in shown


def test_a_geak_reference_is_scored_on_a_gpu_and_refused_with_a_reason_on_a_cpu(first_hour):
    external_suites.suite("GEAK-eval")  # without a checkout, its block did not run
    shown, _ = first_hour
    verdict = re.search(r"add_example\.py: (.*)", shown)
    assert verdict, shown[-2000:]
    if ON_GPU:
        assert verdict.group(1).startswith("correct")
    else:
        assert verdict.group(1).startswith("FAILED unsupported_on_backend at stage platform")
        assert "'cuda' by name" in verdict.group(1)
        assert verdict.group(1).count("not on interpreter") == 1, verdict.group(1)


def test_the_campaign_runs_and_its_report_starts_at_generation_0(first_hour):
    shown, _ = first_hour
    assert "campaign completed after generation 1" in shown
    by_generation = shown[shown.index("By generation"):shown.index("By runs k")]
    assert re.search(r"│\s+0\s+│", by_generation) and re.search(r"│\s+1\s+│", by_generation)


def test_the_analysis_shows_the_best_per_task_and_compares_only_meaningful_timings(first_hour):
    _, printed = first_hour
    lines = printed.splitlines()
    assert lines[0].split() == ["task", "generation", "operator", "speedup", "timing_meaningful"]
    assert {line.split()[1] for line in lines[1:3]} == {"vector_add", "softmax"}
    meaningful = "\n".join(lines[3:])
    if ON_GPU:
        for task in ("vector_add", "softmax"):
            assert re.search(rf"^{task}\s+\d", meaningful, re.MULTILINE), meaningful
    else:
        assert meaningful.startswith("Series([], Name: speedup"), meaningful
