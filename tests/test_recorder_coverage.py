"""experiments/perf/recorder_coverage.py: which external tasks the judge's recorders take, one
subprocess a task, rows written as they finish and resumed; real recorders on the fixture
suites under the interpreter."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "external"


def _coverage(out: pathlib.Path, suite: str, folder: str, *arguments: str) -> str:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "perf" / "recorder_coverage.py"),
                           "--path", str(FIXTURES / folder), "--suite", suite, "--out", str(out),
                           "--jobs", "1", *arguments], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_rocm_fixtures_launch_is_taken_and_files_without_timing_code_are_counted(tmp_path):
    out = tmp_path / "rows.jsonl"
    printed = _coverage(out, "rocm", "rocm")
    assert "1 tasks to record, 0 done earlier, 2 without timing code" in printed  # no test_performance
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["task"], row["outcome"], row["entry"], row["written"]) == ("test_fx_add", "taken", "add_kernel", [2])
    assert "0 tasks to record, 1 done earlier" in _coverage(out, "rocm", "rocm", "--resume")


def test_a_kernelbench_problem_is_taken_with_its_model_as_the_entry(tmp_path):
    out = tmp_path / "rows.jsonl"
    _coverage(out, "kernelbench", "kernelbench", "--tasks", "level2_1_Linear_ReLU")
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["outcome"], row["entry"], row["arity"]) == ("taken", "ModelNew", 1)
