"""experiments/perf/matmul_sweep.py (on kernel_sweep.py): its grids stay within the tables' knobs
and the device's limits and reach every design, --cases and --wide focus a run, a failing or
silent config is recorded without stopping the run, bucket winners are chosen over all of a
bucket's cases, and its smoke mode runs here on the interpreter and writes its tables."""

import json
import pathlib
import subprocess
import sys
import time

import pytest

from benchmarks import registry
from kernel_launches import perf_script, smoke_run

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "experiments" / "perf" / "matmul_sweep.py"
SMS = 132  # a full Hopper part; any count works, this one gives the cases several waves
MEDIUM = "5000x3000x2000 fp16"

sweep = perf_script("matmul_sweep")
machinery = sweep.kernel_sweep


def _design(config):
    return tuple(config[k] for k in sweep.DESIGN_KNOBS if k in config and k != "EPILOGUE")


def _within_knobs(config, module):
    assert set(config) == set(module.KNOBS), config
    assert all(value in module.KNOBS[name] for name, value in config.items()), config


@pytest.mark.parametrize("task_name", sweep.TASKS)
def test_grid_starts_with_the_table_and_stays_within_knobs_and_limits(task_name):
    task = registry.builtin().get(task_name)
    module = machinery.kernel_module(task_name)
    for case in task.cases:
        shape = sweep.shape_of(case.params)
        configs = sweep.grid(module, case.params, SMS, 40)
        assert configs[0] == dict(module.CONFIGS[module._bucket(*shape[1:])]), case.name
        assert len(configs) == 40 and len({sweep.label(c) for c in configs}) == 40, case.name
        for config in configs:
            _within_knobs(config, module)
        for config in configs[1:]:
            assert sweep.fits(config), config
            assert config["num_warps"] == 4 or not config["WARP_SPECIALIZE"], config
        expected = {_design(d) for d in sweep.designs(module.KNOBS, shape, SMS)}
        assert {_design(c) for c in configs[1:]} == expected, f"{case.name}: a design got no config"


def test_wide_grid_reaches_deep_k_tiles_more_stages_groups_epilogues_and_split_k():
    module = machinery.kernel_module("matmul")
    params = registry.builtin().get("matmul").cases[2].params
    configs = sweep.grid(module, params, SMS, 10 ** 6, wide=True)
    for config in configs:
        _within_knobs(config, module)
    assert all(sweep.fits(c) for c in configs[1:])
    seen = lambda name: {c[name] for c in configs[1:]}
    assert seen("BLOCK_K") == {64, 128} and seen("num_stages") == {2, 3, 4, 5} and seen("GROUP_M") == {4, 8, 16}
    assert seen("EPILOGUE") == {0, 1, 2} and seen("SPLIT_K") == {1, 2} and seen("WARP_SPECIALIZE") == {0, 1}
    four_stage_wide_tiles = {c["EPILOGUE"] for c in configs if (c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"],
                             c["num_stages"], c["WARP_SPECIALIZE"], c["SPLIT_K"]) == (128, 256, 64, 4, 0, 1)}
    assert four_stage_wide_tiles == {0, 2}  # the whole staged C tile leaves no room for a fourth stage
    assert len(sweep.grid(module, params, SMS, 10 ** 6)) < len(configs)


def test_split_k_is_swept_where_few_tiles_meet_a_long_k_or_on_the_plain_design_when_wide():
    knobs = machinery.kernel_module("matmul").KNOBS
    splits = lambda shape, axes: sorted({d["SPLIT_K"] for d in sweep.designs(knobs, shape, SMS, axes)})
    assert splits((1, 256, 256, 8192), sweep.AXES) == [1, 2, 4]
    assert splits((1, 4096, 4096, 4096), sweep.AXES) == [1]
    wide = [d for d in sweep.designs(knobs, (1, 5000, 3000, 2000), SMS, sweep.WIDE) if d["SPLIT_K"] > 1]
    assert [(d["PERSISTENT"], d["WARP_SPECIALIZE"]) for d in wide] == [(0, 0)]
    assert all("SPLIT_K" not in d for d in sweep.designs(machinery.kernel_module("batched_matmul").KNOBS,
                                                         (8, 128, 128, 8192), SMS))


def test_shared_memory_and_register_limits_follow_the_launcher_s_stores():
    tile = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 3, "num_warps": 8, "TMA": 1,
            "EPILOGUE": 1, "WARP_SPECIALIZE": 0, "SPLIT_K": 1}
    assert sweep.fits(tile)
    assert not sweep.fits({**tile, "num_stages": 4})  # four stages and the whole staged C tile: 256 KiB
    assert sweep.fits({**tile, "num_stages": 4, "EPILOGUE": 2})  # half of C staged at a time: 224 KiB
    assert sweep.fits({**tile, "num_stages": 4, "EPILOGUE": 0})
    assert sweep.fits({**tile, "num_stages": 4, "SPLIT_K": 2})  # partial sums go through pointers
    assert not sweep.fits({**tile, "num_warps": 4})  # 256 fp32 accumulators per thread
    assert sweep.fits({**tile, "num_warps": 4, "num_stages": 4, "WARP_SPECIALIZE": 1})  # two consumer groups


def test_cases_filter_plans_only_the_named_case():
    tasks = {name: registry.builtin().get(name) for name in sweep.TASKS}
    rows, jobs = machinery.plan(sweep.FAMILY, tasks, SMS, 5, smoke=False, case_filter="5000x3000", wide=True)
    assert {(r["task"], r["case"]) for r in rows} == {("matmul", MEDIUM)}
    assert len(rows) == len(jobs) == 5 and rows[0]["source"] == "table"


def test_a_case_filter_that_matches_nothing_is_refused_with_the_case_names(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--cases", "9999x"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "no case name holds '9999x'" in done.stderr and MEDIUM in done.stderr


def test_phase_one_runs_every_case_s_table_config_first():
    rows, jobs = machinery.plan(sweep.FAMILY, {"matmul": registry.builtin().get("matmul")}, SMS, 5, smoke=False)
    cases = len(registry.builtin().get("matmul").cases)
    assert len(rows) == 5 * cases
    assert [rows[job[0]]["source"] for job in jobs[:cases]] == ["table"] * cases
    assert len({rows[job[0]]["case"] for job in jobs[:cases]}) == cases


def test_cases_are_chosen_by_any_of_several_substrings():
    task = registry.builtin().get("matmul")
    chosen = machinery.selected_cases(task, False, sweep.FAMILY, "4097x,5000x3000")
    assert [task.cases[i].name for i in chosen] == ["5000x3000x2000 fp16", "4097x4097x4097 fp16"]
    assert machinery.selected_cases(task, False, sweep.FAMILY, "") == list(range(len(task.cases)))


def test_a_failing_config_is_recorded_and_the_others_still_run():
    rows, jobs = machinery.plan(sweep.FAMILY, {"matmul": registry.builtin().get("matmul")}, 1, 1, smoke=True)
    broken = {**jobs[0][4], "BLOCK_M": 48}  # not a power of two: tl.arange refuses it
    rows.append({**rows[0], "config": broken, "label": "broken"})
    jobs = [(1, "matmul", sweep.FAMILY.smoke_case, True, broken), jobs[0]]
    machinery.compile_phase(rows, jobs, workers=0, deadline=float("inf"), job_timeout_s=60)
    assert rows[1]["status"] == "failed" and "power of 2" in rows[1]["error"]
    assert rows[0]["status"] == "ok"


def test_a_job_without_a_result_in_its_time_is_recorded_and_the_phase_moves_on():
    rows, jobs = machinery.plan(sweep.FAMILY, {"matmul": registry.builtin().get("matmul")}, 1, 1, smoke=True)
    started = time.monotonic()
    # A spawned worker cannot even import torch in 10 ms: the job's result is not there in time.
    machinery.compile_phase(rows, jobs, workers=1, deadline=started + 600, job_timeout_s=0.01)
    assert time.monotonic() - started < 120  # not held until the deadline
    assert rows[0]["status"] == "failed" and rows[0]["error"] == "no result in 0.01 s: the worker died or hung"


def _job_0_hangs(job):
    """A phase-1 job runner for the test below (a worker imports it from this module)."""
    if job[0] == 0:
        time.sleep(600)
    return job[0], "ok", "", 0.0


@pytest.mark.slow  # waits for the phase's deadline
def test_a_hung_job_holds_up_only_its_own_worker():
    rows, jobs = machinery.plan(sweep.FAMILY, {"matmul": registry.builtin().get("matmul")}, 1, 1, smoke=True)
    rows.append({**rows[0]})
    jobs = [jobs[0], (1, *jobs[0][1:])]
    started = time.monotonic()
    machinery.compile_phase(rows, jobs, workers=2, deadline=started + 40, job_timeout_s=500, run=_job_0_hangs)
    assert time.monotonic() - started < 100  # the hung worker was ended at the deadline
    assert [row["status"] for row in rows] == ["not_run", "ok"]


def test_bucket_winner_is_the_best_geomean_over_the_cases_it_was_timed_on():
    def row(case, label, vs):
        return {"task": "t", "bucket": "b", "case": case, "label": label, "config": {"name": label}, "vs_library": vs}
    rows = [row("c1", "fast on one", 2.0), row("c2", "fast on one", 0.5),  # geomean 1.0
            row("c1", "steady", 1.1), row("c2", "steady", 1.0),  # geomean 1.05
            row("c1", "timed once", 3.0), {**row("c2", "timed once", None), "vs_library": None}]
    assert machinery.bucket_winners(rows) == {("t", "b"): ({"name": "steady"}, 1.049, 2)}


@pytest.mark.slow  # a child process per case: `make test-fast` leaves it out
def test_smoke_run_writes_its_tables(tmp_path):
    row, summary = smoke_run("matmul_sweep", tmp_path)
    assert (row["task"], row["case"]) == ("matmul", "65x129x70 fp16")
    assert row["EPILOGUE"] and row["WARP_SPECIALIZE"]  # every knob of the table is a column
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["cases"][0]["best"]["label"] == row["label"] == best["cases"][0]["table"]["label"]
    assert f"| matmul | 65x129x70 fp16 | small | {row['label']} |" in summary
    assert '    "small": (("BLOCK_M", ' in summary and "vs cuBLAS" in summary


def test_a_padded_c_is_swept_where_c_s_rows_are_unaligned_on_tma_designs_without_split_k():
    knobs = machinery.kernel_module("matmul").KNOBS
    padded = lambda shape: [d for d in sweep.designs(knobs, shape, SMS, sweep.WIDE) if d["PAD_C"]]
    assert padded((1, 4096, 4096, 4096)) == [] and padded((1, 4096, 4096, 4097)) == []
    unaligned_n = padded((1, 4097, 4097, 4097))
    assert unaligned_n and all(d["TMA"] and d["SPLIT_K"] == 1 and not d["WARP_SPECIALIZE"] for d in unaligned_n)
    assert {d["PERSISTENT"] for d in unaligned_n} == {0, 1}


@pytest.mark.slow  # spawns a second worker after the first is killed
def test_a_hung_job_costs_its_worker_and_a_fresh_one_runs_the_rest():
    rows, jobs = machinery.plan(sweep.FAMILY, {"matmul": registry.builtin().get("matmul")}, 1, 1, smoke=True)
    rows += [{**rows[0]}, {**rows[0]}]
    jobs = [jobs[0], (1, *jobs[0][1:]), (2, *jobs[0][1:])]
    started = time.monotonic()
    machinery.compile_phase(rows, jobs, workers=1, deadline=started + 300, job_timeout_s=5, run=_job_0_hangs)
    assert time.monotonic() - started < 200  # not held until the deadline
    assert [row["status"] for row in rows] == ["failed", "ok", "ok"]
    assert rows[0]["error"] == "no result in 5 s: the worker died or hung"
