"""The README's runnable sections ("First hour", "External suites", "Sweeps"), run as written:
each section's shell blocks in one `bash -e` session from the checkout with this Python's bin
first on PATH (a user's environment: no TRITON_INTERPRET), then its Python blocks; each shows
what the section says it shows. A block that reads GEAK-eval (through KERNELEVO_EXTERNAL) is
left out when there is no checkout, and the test of what it shows is skipped, saying why.
Untagged blocks (a GPU and GEAK-eval's command) are shown, not run."""

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
from benchmarks.external import load_suite

pytestmark = pytest.mark.slow  # campaigns, a sweep, `evo eval`: `make test-fast` leaves it out

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURE_SUITE = ROOT / "tests" / "fixtures" / "external" / "tritonbench"
SWEEP_FIGURES = ("sweep_accuracy_vs_spend", "sweep_speedup_vs_spend", "sweep_vs_generation",
                 "sweep_vs_parallel", "sweep_grid")
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


def run_section(title: str, pythons: int, folder: pathlib.Path | None = None) -> tuple[str, str]:
    """Runs the section's shell blocks, then its `pythons` Python blocks; returns both
    outputs. `folder` (where its commands write) is removed before and after."""
    text = section((ROOT / "README.md").read_text(), title)
    shell, python = blocks(text, "bash"), blocks(text, "python")
    shell = [block for block in shell if HAS_GEAK or external_suites.VARIABLE not in block]
    assert shell and len(python) == pythons, (f"{title}: expected bash blocks and {pythons} "
                                              f"python blocks, got {len(shell)} and {len(python)}")
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        ran_shell = _run(["bash", "-e", "-c", "\n".join(shell)])
        assert ran_shell.returncode == 0, ran_shell.stdout[-4000:]
        ran_python = [_run([sys.executable, "-c", block]) for block in python]
        for ran in ran_python:
            assert ran.returncode == 0, ran.stdout[-4000:]
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    return ran_shell.stdout, "".join(ran.stdout for ran in ran_python)


@pytest.fixture(scope="module")
def first_hour():
    return run_section("First hour", 1, ROOT / "results" / "first-hour")


@pytest.fixture(scope="module")
def sweeps():
    return run_section("Sweeps", 1, ROOT / "results" / "first-sweep")


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


def test_the_external_suites_example_says_which_task_is_timed_and_what_offline_search_varies():
    shown, _ = run_section("External suites", 0)
    for task in load_suite("tritonbench-revised", str(FIXTURE_SUITE)):
        knobs = sorted(listing.offline_knobs(task).get("cuda", {}))
        assert f"{task.name} timed: {not task.untimed_reason} knobs on cuda: {knobs}" in shown
    assert "scale_shift timed: True knobs on cuda: ['_scale_shift_kernel.BLOCK_SIZE'" in shown
    assert "row_max timed: False" in shown and "fnuz_cast timed: False knobs on cuda: []" in shown


def test_the_sweep_reports_the_grid_equal_compute_its_figures_and_the_noise(sweeps):
    shown, _ = sweeps
    for table in ("Best candidate per task (over every cell)", "Generations x islands",
                  "At equal compute: evaluations"):
        assert table in shown, table
    for figure in SWEEP_FIGURES:
        assert re.search(rf"figure: .*results/first-sweep/figures/{figure}\.png", shown), figure
    assert "note: noise band of vector_add: the seed (the baseline against itself) read" in shown
    if not ON_GPU:  # no best by speed anywhere: the report, and the cells' progress lines
        assert "interpreter timing: speedups not meaningful" in shown
        assert "n/a (interpreter)" in shown and "x (interpreter)" not in shown
        assert ("best n/a (interpreter): ranked by correctness; timing not meaningful "
                "here") in shown


def test_load_sweep_gives_a_column_per_override(sweeps):
    _, printed = sweeps
    lines = printed.splitlines()
    assert lines[0].split() == ["candidates", "correct"]
    assert lines[1].split() == ["search.generations", "search.islands"]
    assert len(lines) == 2 + 4  # a row per (generations, islands) cell
