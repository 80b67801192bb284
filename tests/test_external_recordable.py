"""The recording survey (experiments/perf/external_recordable.py) on the fixture suites: a
TritonBench-revised performance file whose call_op calls the kernel module's entry once per
input is recorded as such, with its inputs' seed behaviour; a task without a performance file
is reported as such; a resumed call skips the tasks the file holds; a ROCm test_performance
that launches a jit kernel inside its bench is recorded as that launch. Real subprocesses,
CPU, under the interpreter."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "perf" / "external_recordable.py"
FIXTURES = ROOT / "tests" / "fixtures" / "external"


def _survey(out: pathlib.Path, suite: str, folder: str, *arguments: str) -> dict:
    """Runs the survey; returns its rows by task name."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(SCRIPT), "--path", str(FIXTURES / folder), "--suites", suite,
                           "--out", str(out), "--timeout", "120", *arguments],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    names = [row["task"] for row in rows]
    assert len(names) == len(set(names)), names
    return {row["task"]: row for row in rows}


def test_a_performance_file_is_recorded_as_one_entry_call_per_input(tmp_path):
    out = tmp_path / "rows.jsonl"
    first = _survey(out, "tritonbench-revised", "tritonbench", "--tasks", "row_max")
    assert set(first) == {"row_max"}
    assert first["row_max"]["status"] == "no timing code"
    assert "row_max_perf.py" in first["row_max"]["reason"]

    rows = _survey(out, "tritonbench-revised", "tritonbench", "--resume")
    assert set(rows) == {"row_max", "fnuz_cast", "scale_shift"}
    row = rows["scale_shift"]
    assert row["status"] == "one entry call per input", row
    assert row["entries"] == ["scale_shift"] and not row["entry_mismatch"]
    assert row["inputs"] == 6 and row["calls_per_input"] == [1] * 6
    assert row["arg_bytes"] == [4 * 2 ** i for i in range(10, 16)]  # float32 vectors of 2**10..2**15
    assert row["first_calls"][0]["args"] == [{"tensor": [1024], "dtype": "float32", "device": "cpu"}, "2.0", "0.5"]
    assert row["deterministic"] is True and row["changes_with_seed"] == "all"
    assert rows["fnuz_cast"]["status"] == "no timing code"


def test_a_rocm_bench_that_launches_a_jit_kernel_is_recorded_as_that_launch(tmp_path):
    rows = _survey(tmp_path / "rows.jsonl", "rocm", "rocm", "--tasks", "test_fx_add")
    row = rows["test_fx_add"]
    assert row["status"] == "one entry call per input", row
    assert row["entries"] == ["add_kernel[grid]"] and row["launches"] == ["add_kernel[grid]"]
    assert row["inputs"] >= 1 and all(size > 0 for size in row["arg_bytes"])
