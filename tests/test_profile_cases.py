"""experiments/perf/profile_cases.py and profile_reading.py: ncu's CSV and torch.profiler's trace
are read into kernel records and split into the two sides, the rules name what differs, ncu that
collects nothing falls back to torch.profiler, a child that fails, hangs or is never reached is
recorded and the run goes on, and the smoke mode runs here and writes its tables."""

import argparse
import csv
import json
import subprocess
import sys
import time

import pytest

from kernel_launches import PERF, perf_script

cases = perf_script("profile_cases")
reading = cases.reading

NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
              '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _ncu_row(kernel_id: int, name: str, metric: str, unit: str, value: str) -> str:
    return (f'"{kernel_id}","4242","python3","host","{name}","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


NCU_LOG = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3)",
    '"a line the application printed, quoted"',
    "another one, not quoted",
    '==PROF== Profiling "_row_sum_kernel" - 0: 0%....50%....100% - 3 passes',
    NCU_HEADER,
    _ncu_row(0, "_row_sum_kernel", "gpu__time_duration.sum", "ns", "35,104"),
    _ncu_row(0, "_row_sum_kernel", "dram__bytes_read.sum", "byte", "67,174,400"),
    _ncu_row(0, "_row_sum_kernel", "dram__bytes_write.sum", "byte", "16,384"),
    _ncu_row(0, "_row_sum_kernel", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "56.20"),
    _ncu_row(0, "_row_sum_kernel", "launch__grid_size", "", "1,024"),
    _ncu_row(0, "_row_sum_kernel", "launch__waves_per_multiprocessor", "", "n/a"),
    _ncu_row(1, "at::cuda::(anonymous namespace)::spin_kernel(long)", "gpu__time_duration.sum", "nsecond", "1,500"),
    _ncu_row(2, "triton_red_fused_sum_0", "gpu__time_duration.sum", "usecond", "28.4"),
    _ncu_row(2, "triton_red_fused_sum_0", "dram__bytes_read.sum", "Mbyte", "67.17"),
    _ncu_row(2, "triton_red_fused_sum_0", "dram__bytes_write.sum", "byte", "16,384"),
    "==PROF== Disconnected from process 4242",
])


def _kernel(**fields) -> dict:
    return dict.fromkeys(reading.KERNEL_FIELDS) | fields


def _side(*kernels: dict) -> dict:
    return reading.summarize(list(kernels), None, 64e6, None)


def test_ncu_csv_gives_a_record_per_kernel_in_base_units_and_splits_at_the_marker():
    kernels = reading.ncu_kernels(NCU_LOG)
    assert [reading.short_name(k["name"]) for k in kernels] == ["_row_sum_kernel", "spin_kernel",
                                                                 "triton_red_fused_sum_0"]
    ours = kernels[0]
    assert ours["time_us"] == pytest.approx(35.104) and ours["grid"] == 1024 and ours["waves"] is None
    assert ours["dram_bytes"] == 67_174_400 + 16_384 and ours["dram_pct"] == pytest.approx(56.2)
    assert kernels[2]["time_us"] == pytest.approx(28.4) and kernels[2]["dram_bytes"] == pytest.approx(67.17e6 + 16_384)
    sides = reading.split_at_marker(kernels)
    assert [k["name"] for k in sides["ours"]] == ["_row_sum_kernel"]
    assert [k["name"] for k in sides["compile"]] == ["triton_red_fused_sum_0"]


def test_kernels_without_the_marker_cannot_be_split():
    with pytest.raises(ValueError, match="spin_kernel"):
        reading.split_at_marker([_kernel(name="_row_sum_kernel", time_us=1.0)])


def test_torch_profiler_trace_gives_device_operations_with_their_launch():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::sum", "ts": 5, "dur": 40},
        {"ph": "X", "cat": "kernel", "name": "void at::native::reduce_kernel<512, 1>(float*)", "ts": 30, "dur": 12.5,
         "args": {"grid": [132, 2, 1], "block": [512, 1, 1], "registers per thread": 32, "shared memory": 16,
                  "est. achieved occupancy %": 88}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 10, "dur": 1.5, "args": {"device": 0}},
    ]}
    memset, kernel = reading.kineto_kernels(trace)
    assert (memset["name"], memset["time_us"], memset["grid"]) == ("Memset (Device)", 1.5, None)
    assert (kernel["time_us"], kernel["grid"], kernel["block"], kernel["registers"], kernel["occupancy_pct"]) == \
        (12.5, 264, 512, 32, 88)
    assert reading.short_name(kernel["name"]) == "reduce_kernel"


def test_summary_weights_percentages_by_time_and_takes_the_main_kernels_launch():
    side = _side(_kernel(name="pad", time_us=10.0, dram_pct=20.0, grid=64, dram_bytes=1e6),
                 _kernel(name="gemm", time_us=30.0, dram_pct=60.0, grid=480, registers=168, dram_bytes=3e6))
    assert (side["kernels"], side["time_us"], side["dram_bytes"]) == (2, 40.0, 4e6)
    assert side["dram_pct"] == pytest.approx(50.0) and side["dram_source"] == "counters"
    assert (side["main_kernel"], side["main_share"], side["grid"], side["registers"]) == ("gemm", 0.75, 480, 168)
    modelled = reading.summarize([_kernel(name="k", time_us=20.0)], None, 64e6, 3200.0)
    assert modelled["dram_pct"] == pytest.approx(100.0) and modelled["dram_source"] == "model"


def test_reason_names_extra_launches_extra_bytes_and_fewer_warps_in_flight():
    ours = _side(_kernel(name="copy_rows", time_us=10.0, dram_pct=40.0, dram_bytes=30e6, occupancy_pct=30.0,
                         grid=4096, block=128, registers=40),
                 _kernel(name="_row_sum_kernel", time_us=40.0, dram_pct=45.0, dram_bytes=70e6, occupancy_pct=30.0,
                         grid=4096, block=128, registers=96, blocks_limit_registers=5.0, blocks_limit_warps=16.0,
                         blocks_limit_blocks=32.0))
    theirs = _side(_kernel(name="triton_red_fused_sum_0", time_us=30.0, dram_pct=80.0, dram_bytes=67e6,
                           occupancy_pct=70.0, grid=8192, block=256, registers=32))
    text = reading.reason(ours, theirs, "ncu")
    assert text.startswith("ours 1.67x compile's kernel time (50.0 vs 30.0 us, ncu)")
    assert "ours launches 2 kernels vs compile's 1 (20% of ours outside _row_sum_kernel)" in text
    assert "ours moves 1.49x the DRAM bytes (100.0 vs 67.0 MB)" in text
    assert ("ours at 44% of DRAM peak vs compile 80%: fewer warps in flight (occupancy 30% vs 70%; "
            "4096 programs x 128 threads, 96 regs vs 8192 programs x 256 threads, 32 regs; "
            "ours capped by registers: 5 blocks/SM)") in text


def test_reason_names_a_part_wave_and_a_library_kernel():
    ours = _side(_kernel(name="_matmul_kernel", time_us=125.0, sm_pct=55.0, occupancy_pct=12.0, waves=3.64))
    theirs = _side(_kernel(name="sm90_xmma_gemm_f16f16_f32", time_us=100.0, sm_pct=80.0, occupancy_pct=12.0,
                           waves=2.0))
    text = reading.reason(ours, theirs, "ncu")
    assert "ours at 55% SM throughput vs compile 80%: occupancy alike (occupancy 12% vs 12%)" in text
    assert "compile's main kernel is a library one (sm90_xmma_gemm_f16f16_f32)" in text
    assert "last wave" not in text  # 64% full is not a tail
    tail = _side(_kernel(name="_matmul_kernel", time_us=125.0, waves=3.2))
    assert "ours' last wave 20% full (3.20 waves)" in reading.reason(tail, theirs, "ncu")


def test_reason_says_when_ours_is_not_slower_or_no_rule_fires():
    fast = _side(_kernel(name="k", time_us=10.0))
    assert reading.reason(fast, _side(_kernel(name="k", time_us=10.2)), "torch").endswith("not slower here")
    slow = _side(_kernel(name="k", time_us=20.0))
    assert "no rule fired" in reading.reason(slow, fast, "torch")
    assert reading.reason(slow, {"time_us": None}, "torch") == "not compared: a side has no measurement"


def test_a_profiler_that_collects_nothing_gives_way_ncu_first_losing_its_extra_metrics():
    state = {"profiler": "ncu", "notes": [], "metrics": [*reading.NCU_METRICS, *reading.NCU_EXTRA_METRICS]}
    cases.fall_back(state, "==ERROR== Failed to find metric launch__waves_per_multiprocessor")
    assert (state["profiler"], state["metrics"]) == ("ncu", list(reading.NCU_METRICS))
    cases.fall_back(state, "ncu printed no kernel rows")
    assert state["profiler"] == "torch" and len(state["notes"]) == 2
    cases.fall_back(state, "torch.profiler recorded no device kernel on either side")
    assert state["profiler"] == "none" and state["notes"][-1].startswith("torch collected nothing")
    no_counters = {"profiler": "ncu", "notes": [], "metrics": [*reading.NCU_METRICS, *reading.NCU_EXTRA_METRICS]}
    cases.fall_back(no_counters, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    assert no_counters["profiler"] == "torch"


def test_a_missing_ncu_is_not_found():
    assert cases.find_ncu("/nonexistent/ncu") is None


def test_a_child_that_fails_is_recorded_with_its_status_and_output(tmp_path):
    status, error = cases.run_child([sys.executable, "-c", "import sys; print('the case broke'); sys.exit(3)"],
                                    {}, 30, tmp_path / "child.log")
    assert status == "failed" and error.startswith("exit status 3") and "the case broke" in error


def test_unknown_case_is_a_usage_error_listing_the_cases(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cases.main([str(tmp_path), "--cases", "row_sum:4096x4096"])
    assert "task row_sum has no case '4096x4096'; its cases: 4096x4096 fp32; 8192x5000 fp16" in capsys.readouterr().err


@pytest.mark.slow  # a child process per case: `make test-fast` leaves it out
def test_warm_phase_runs_every_case_once_side_by_side_and_skips_what_time_leaves_out(tmp_path):
    pairs = cases.resolve_cases(argparse.ArgumentParser(), "row_sum:9x1000 fp32;vector_add:N=1025 fp32", True)
    args = argparse.Namespace(smoke=True, warm_workers=2, case_timeout_s=120.0)
    assert cases.warm(pairs, args, tmp_path, time.monotonic() + 240) == {"ok": 2}
    assert sorted(path.name for path in tmp_path.glob("warm*.json")) == ["warm0.json", "warm1.json"]
    assert cases.warm(pairs, args, tmp_path, time.monotonic()) == {"not_run": 2}


def _run(out, *extra: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    done = subprocess.run([sys.executable, str(PERF / "profile_cases.py"), str(out), "--smoke", *extra],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(out / "profile.csv") as handle:
        return done, list(csv.DictReader(handle))


@pytest.mark.slow  # a child process per case: `make test-fast` leaves it out
def test_smoke_times_both_sides_and_writes_the_tables(tmp_path):
    done, rows = _run(tmp_path)
    assert [(r["task"], r["case"], r["side"], r["status"]) for r in rows] == [
        ("row_sum", "9x1000 fp32", "ours", "ok"), ("row_sum", "9x1000 fp32", "compile", "ok")]
    assert all(float(r["time_us"]) > 0 and r["profiler"] == "none" for r in rows)
    assert rows[0]["reason"].startswith("ours ") and "compile's wall time" in rows[0]["reason"]
    summary = (tmp_path / "summary.md").read_text()
    assert summary in done.stdout and "| row_sum | 9x1000 fp32 | none |" in summary
    saved = json.loads((tmp_path / "profile.json").read_text())
    assert saved["environment"]["device"] == "cpu-interpreter" and saved["cases"][0]["status"] == "ok"


@pytest.mark.slow  # a child process per case: `make test-fast` leaves it out
def test_a_child_over_its_time_limit_is_killed_and_the_next_case_still_runs(tmp_path):
    started = time.monotonic()
    _, rows = _run(tmp_path, "--cases", "row_sum:9x1000 fp32;vector_add:N=1025 fp32", "--case-timeout-s", "1")
    assert [(r["task"], r["status"]) for r in rows] == [("row_sum", "timeout"), ("vector_add", "timeout")]
    assert "killed after 1 s" in rows[1]["reason"] and time.monotonic() - started < 60


@pytest.mark.slow  # a child process per case: `make test-fast` leaves it out
def test_cases_past_max_seconds_are_recorded_not_run(tmp_path):
    _, rows = _run(tmp_path, "--cases", "row_sum:9x1000 fp32;vector_add:N=1025 fp32", "--max-seconds", "0")
    assert [(r["task"], r["status"], r["reason"]) for r in rows] == [
        ("row_sum", "not_run", "not_run: out of time (--max-seconds)"),
        ("vector_add", "not_run", "not_run: out of time (--max-seconds)")]
