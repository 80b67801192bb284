"""experiments/perf/membound_sweep.py (on kernel_sweep.py): the memory-bound baselines give their
timed cases buckets of their own, the grid starts with the table, stays within the knobs and the
register cap, gives a bucket's cases the same configs and every design some, its configs run
correctly on the interpreter, and its smoke mode writes its tables."""

import csv
import subprocess
import sys

import pytest

from benchmarks import registry
from kernel_launches import PERF, perf_script
from operators import knobs

SMS = 132
CONFIGS_PER_CASE = 32

sweep = perf_script("membound_sweep")
SUITE = registry.builtin()
SEPARATED = ("row_sum", "cumsum", "flip2d", "layernorm", "rmsnorm", "transpose")
"""Tasks whose timed cases each get a bucket of their own (the others share where their
cases are alike)."""


def _module(task_name):
    return sweep.kernel_sweep.kernel_module(task_name)


def _bucket(task_name, params):
    return _module(task_name)._bucket(*sweep.bucket_args(params))


@pytest.mark.parametrize("task_name", SEPARATED)
def test_each_timed_case_has_its_own_bucket(task_name):
    buckets = [_bucket(task_name, case.params) for case in SUITE.get(task_name).cases]
    assert len(set(buckets)) == len(buckets), buckets


@pytest.mark.parametrize("task_name", sweep.TASKS)
def test_grid_starts_with_the_table_and_stays_within_knobs_and_the_register_cap(task_name):
    module = _module(task_name)
    for case in SUITE.get(task_name).cases:
        configs = sweep.grid(module, case.params, SMS, CONFIGS_PER_CASE)
        assert configs[0] == dict(module.CONFIGS[_bucket(task_name, case.params)]), case.name
        assert len({sweep.label(c) for c in configs}) == len(configs) == CONFIGS_PER_CASE, case.name
        for config in configs:
            assert set(config) == set(module.KNOBS), config
            assert all(value in module.KNOBS[name] for name, value in config.items()), config
        blocks = [[v for k, v in c.items() if k in sweep.EXTENTS] for c in configs[1:]]
        assert all(sweep.math.prod(b) <= knobs.MAX_BLOCK_ELEMENTS for b in blocks)
        grid_kinds = {tuple(min(c[k], 1) if k == "PROGRAMS" else c[k] for k in module.DESIGN) for c in configs}
        assert grid_kinds == {tuple(d.values()) for d in sweep.designs(module.KNOBS, tuple(module.DESIGN))}


def test_a_bucket_s_cases_are_swept_on_the_same_configs():
    shared = 0
    for task_name in sweep.TASKS:
        by_bucket = {}
        for case in SUITE.get(task_name).cases:
            labels = [sweep.label(c) for c in sweep.grid(_module(task_name), case.params, SMS, CONFIGS_PER_CASE)]
            by_bucket.setdefault(_bucket(task_name, case.params), []).append(labels)
        for lists in by_bucket.values():
            shared += len(lists) > 1
            assert all(other == lists[0] for other in lists[1:]), task_name
    assert shared  # softmax, row_argmax, bias_gelu and vector_add each share one


def test_long_rows_get_one_row_a_program_at_sixteen_warps_and_wide_chunks():
    case = next(c for c in SUITE.get("row_sum").cases if c.name == "1024x65537 fp16")
    configs = sweep.grid(_module("row_sum"), case.params, SMS, CONFIGS_PER_CASE)
    assert any((c["BLOCK_M"], c["num_warps"], c["BLOCK_N"]) == (1, 16, 8192) for c in configs[:4])


@pytest.mark.parametrize("task_name", ["row_sum", "flip2d", "softmax"])
def test_the_first_grid_configs_are_correct_on_the_interpreter(task_name):
    task = SUITE.get(task_name)
    checked = 0
    for case in task.cases:
        for config in sweep.grid(_module(task_name), case.params, SMS, 4)[1:]:
            entry = sweep.kernel_sweep.entry_with(task, config)
            args = task.make_inputs(task.interpreter_cases[1].params, 1, "cpu")
            verdict = sweep.kernel_sweep.checking.compare_outputs([task.reference(*args)], [entry(*args)],
                                                                   task.tolerance)
            assert verdict["kind"] is None, (case.name, sweep.label(config), verdict)
            checked += 1
    assert checked == 3 * len(task.cases)


@pytest.mark.slow  # a child process on the interpreter: `make test-fast` leaves it out
def test_smoke_run_writes_its_tables(tmp_path):
    done = subprocess.run([sys.executable, str(PERF / "membound_sweep.py"), str(tmp_path), "--smoke"],
                          cwd=PERF.parent.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(tmp_path / "sweep.csv") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["task"], row["case"], row["bucket"], row["source"], row["status"]) == \
        ("row_sum", "5x513 fp16", "small", "table", "ok")
    assert float(row["median_us"]) > 0 and float(row["max_abs_err"]) < 0.01
    bandwidth = (tmp_path / "bandwidth.md").read_text()
    assert f"| row_sum | 5x513 fp16 | small | {row['label']} | {row['median_us']} |" in bandwidth
    assert (tmp_path / "summary.md").read_text() in done.stdout and bandwidth in done.stdout


def test_the_output_folder_comes_first():
    with pytest.raises(SystemExit, match="OUT_DIR"):
        sweep.main(["--smoke", "out"])
