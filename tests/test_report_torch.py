"""`evo report` against torch's own timings: the per-case join, the summary, and the refusals.

The campaign and the timings are synthetic and small enough to check by hand; the last test
runs the real timing script under the interpreter to show that what it writes is what the
report reads.
"""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evo import cli
from evo.analysis import torch_comparison
from synthetic_results import evaluation, write_campaign

GPU = "NVIDIA H200"
SCRIPT = Path(__file__).parent.parent / "experiments" / "perf" / "torch_baselines.py"


def _evo(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def _row(task, speedup, cases, best_us, baseline_us, **fields):
    return {**evaluation(task, 0, 1, call_ok=True, correct=True, speedup=speedup, roofline=0.5,
                         **fields),
            "case_names": cases, "latency_us": best_us, "ref_latency_us": baseline_us,
            "device": GPU}


def _timing(task, case, mode, median_us, floor_us, copy_floor_us, bound, torch_op,
            status="ok", device=GPU):
    return {"task": task, "case": case, "mode": mode, "device": device, "backend": "cuda",
            "status": status, "error": None if status == "ok" else "it broke",
            "median_us": median_us if status == "ok" else None, "floor_us": floor_us,
            "copy_floor_us": copy_floor_us, "bound": bound, "torch_op": torch_op,
            "torch_version": "2.11.0", "copy_gbs": 4000.0}


def _timings(device=GPU):
    """Per case: eager, default, max-autotune-no-cudagraphs (None: that mode's status)."""
    table = {("vector_add", "a"): ((30, 20, 10), 9, 9, "memory", "reference"),
             ("vector_add", "b"): ((40, 10, "failed"), 10, 15, "memory", "reference"),
             ("matmul", "m"): ((90, 90, 50), 50, 5, "compute", "cublas"),
             ("flash_attention", "f"): ((100, 120, "timeout"), 40, 4, "compute", "sdpa")}
    rows = []
    for (task, case), (latencies, floor_us, copy_floor_us, bound, op) in table.items():
        for mode, latency in zip(torch_comparison.MODES, latencies):
            status = latency if isinstance(latency, str) else "ok"
            rows.append(_timing(task, case, mode, latency, floor_us, copy_floor_us, bound, op,
                                status, device))
    return rows


def _campaign(folder, timings_device=GPU):
    rows = [
        _row("vector_add", 2.0, ["a", "b"], [10.0, 20.0], [20.0, 40.0]),
        _row("vector_add", 1.5, ["a", "b"], [15.0, 25.0], [20.0, 40.0]),  # not the best
        _row("matmul", 0.8, ["m"], [100.0], [80.0]),
        _row("flash_attention", 0.5, ["f"], [200.0], [100.0]),
    ]
    write_campaign(folder, rows, islands=1)
    if timings_device:
        pq.write_table(pa.Table.from_pylist(_timings(timings_device)),
                       folder / torch_comparison.TIMINGS_FILE)
    return folder


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    folder = _campaign(tmp_path_factory.mktemp("torch") / "c")
    result = _evo("report", folder, "--json")
    assert result.exit_code == 0, result.output
    return folder, json.loads(result.stdout)["torch"]


def test_best_kernel_is_joined_with_torch_case_by_case(joined):
    _, versus = joined
    assert versus["status"] == "joined" and versus["devices"] == [GPU]
    cases = {(c["task"], c["case"]): c for c in versus["cases"]}
    assert set(cases) == {("vector_add", "a"), ("vector_add", "b"), ("matmul", "m"),
                          ("flash_attention", "f")}
    a = cases["vector_add", "a"]
    assert (a["best_us"], a["baseline_us"]) == (10.0, 20.0)
    assert a["speedup"] == pytest.approx({"baseline": 2.0, "eager": 3.0, "default": 2.0,
                                          "max-autotune-no-cudagraphs": 1.0})
    assert (a["roofline"], a["copy_bandwidth"]) == pytest.approx((0.9, 0.9))
    b = cases["vector_add", "b"]
    assert b["torch_us"]["max-autotune-no-cudagraphs"] is None
    assert b["torch_status"]["max-autotune-no-cudagraphs"] == "failed"
    assert b["speedup"]["default"] == pytest.approx(0.5)
    assert cases["matmul", "m"]["copy_bandwidth"] is None  # compute-bound: no bandwidth bar


def test_summary_gives_geomeans_worst_cases_libraries_and_bandwidth(joined):
    _, versus = joined
    summary = versus["summary"]
    versus_mode = summary["versus"]
    assert versus_mode["baseline"]["geomean"] == pytest.approx((2 * 2 * 0.8 * 0.5) ** 0.25)
    assert versus_mode["eager"]["geomean"] == pytest.approx((3 * 2 * 0.9 * 0.5) ** 0.25)
    assert versus_mode["default"]["geomean"] == pytest.approx((2 * 0.5 * 0.9 * 0.6) ** 0.25)
    assert versus_mode["default"]["worst"] == pytest.approx(
        {"speedup": 0.5, "task": "vector_add", "case": "b"})
    autotune = versus_mode["max-autotune-no-cudagraphs"]
    assert (autotune["cases"], autotune["geomean"]) == (2, pytest.approx(math.sqrt(0.5)))
    assert summary["libraries"]["cublas"]["geomean"] == pytest.approx(0.9)
    assert summary["libraries"]["sdpa"]["geomean"] == pytest.approx(0.5)
    assert summary["memory_bound"] == {"cases": 2, "at_copy_bandwidth": 1, "bar": 0.85}


@pytest.mark.slow
def test_table_shows_the_comparison_and_a_figure(joined):
    folder, _ = joined
    result = _evo("report", folder)
    assert result.exit_code == 0, result.output
    for text in ("Best kernel vs torch", "3.00x", "failed", "timeout", "matmul-class vs cuBLAS",
                 "flash attention vs SDPA", "1 of 2", "versus_torch.png"):
        assert text in result.stdout, text
    assert (folder / "figures" / "versus_torch.png").stat().st_size > 0


def test_timings_from_another_gpu_are_not_joined(tmp_path):
    folder = _campaign(tmp_path / "c", timings_device=None)
    other = tmp_path / "h100.parquet"
    pq.write_table(pa.Table.from_pylist(_timings("NVIDIA H100 80GB HBM3")), other)
    result = _evo("report", folder, "--json", "--torch-timings", other)
    assert result.exit_code == 0, result.output
    versus = json.loads(result.stdout)["torch"]
    assert versus["status"] == "device_mismatch" and versus["cases"] == []
    assert "NVIDIA H100" in versus["message"] and GPU in versus["message"]


@pytest.mark.slow
def test_without_timings_the_report_says_how_to_measure_them(tmp_path):
    folder = _campaign(tmp_path / "c", timings_device=None)
    result = _evo("report", folder)
    assert result.exit_code == 0, result.output
    assert "torch_baselines.py --out" in result.stdout and "torch_timings.parquet" in result.stdout
    named = _evo("report", folder, "--torch-timings", tmp_path / "nope.parquet")
    assert named.exit_code == 2 and "no torch timings file" in named.output


def test_interpreter_campaign_needs_a_gpu(tmp_path):
    write_campaign(tmp_path / "c", [evaluation("add", 0, 1, call_ok=True, correct=True,
                                               speedup=1.2, meaningful=False)], islands=1)
    result = _evo("report", tmp_path / "c", "--json")
    versus = json.loads(result.stdout)["torch"]
    assert versus["status"] == "needs_gpu" and "GPU" in versus["message"]


@pytest.mark.slow
def test_timing_script_writes_a_file_the_report_reads(tmp_path):
    """Eager is timed (wall clock under the interpreter); torch.compile takes tens of
    seconds on a CPU, so a one-second guard kills it on each case, which is recorded and
    the next case still runs."""
    out = tmp_path / "torch_timings.parquet"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    done = subprocess.run([sys.executable, str(SCRIPT), "--tasks", "vector_add", "--modes",
                           "eager,default", "--max-cases", "2", "--case-timeout-s", "1",
                           "--jobs", "2", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    timings = torch_comparison.load_timings(out)
    assert len(timings) == 4 and set(timings["device"]) == {"cpu-interpreter"}
    eager = timings[timings["mode"] == "eager"]
    assert (eager["status"] == "ok").all() and (eager["median_us"] > 0).all()
    assert set(eager["method"]) == {"wall"} and eager["floor_us"].isna().all()
    compiled = timings[timings["mode"] == "default"]
    assert (compiled["status"] == "timeout").all()
    assert compiled["error"].str.contains("--case-timeout-s").all()
    assert set(timings["torch_op"]) == {"reference"} and set(timings["bound"]) == {"memory"}


def test_a_second_timing_run_keeps_what_the_first_measured(tmp_path):
    spec = importlib.util.spec_from_file_location("torch_baselines", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up there
    spec.loader.exec_module(script)
    first = [_timing("matmul", "m", "eager", 90, 50, 5, "compute", "cublas"),
             _timing("matmul", "m", "default", 95, 50, 5, "compute", "cublas"),
             _timing("matmul", "m", "eager", 1, 50, 5, "compute", "cublas", device="other GPU")]
    earlier = tmp_path / "first.parquet"
    pq.write_table(pa.Table.from_pylist(first), earlier)
    second = [_timing("matmul", "m", "default", 80, 50, 5, "compute", "cublas"),
              _timing("matmul", "m", "max-autotune-no-cudagraphs", None, 50, 5, "compute",
                      "cublas", status="not_run")]
    merged = {row["mode"]: (row["status"], row["median_us"])
              for row in script.kept_from(earlier, second, GPU)}
    assert merged == {"eager": ("ok", 90), "default": ("ok", 80),
                      "max-autotune-no-cudagraphs": ("not_run", None)}
