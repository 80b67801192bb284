"""experiments/perf/attention_sweep.py (on kernel_sweep.py): its grid starts with the table, stays
within the table's knobs and the registers, gives a bucket's cases the same configs and every
design some, and its smoke mode runs here on the interpreter and writes its tables."""

import pytest

from benchmarks import registry
from kernel_launches import perf_script, smoke_run

SMS = 132

sweep = perf_script("attention_sweep")
TASK = registry.builtin().get("flash_attention")
MODULE = sweep.kernel_sweep.kernel_module("flash_attention")


def _design(config):
    return tuple(config[k] for k in sweep.DESIGN_KNOBS)


def test_grid_starts_with_the_table_reaches_every_design_and_stays_within_knobs_and_registers():
    for case in TASK.cases:
        configs = sweep.grid(MODULE, case.params, SMS, 40)
        bucket = MODULE._bucket(case.params["S"])
        assert configs[0] == dict(MODULE.CONFIGS[bucket]), case.name
        assert len({sweep.label(c) for c in configs}) == len(configs) == 40, case.name
        for config in configs:
            assert set(config) == set(MODULE.KNOBS), config
            assert all(value in MODULE.KNOBS[name] for name, value in config.items()), config
        assert all(sweep.fits(c) and (c["num_warps"] == 4 or not c["WARP_SPECIALIZE"]) for c in configs[1:])
        assert {_design(c) for c in configs[1:]} == {_design(d) for d in sweep.designs(MODULE.KNOBS)}
        assert all(c["TMA"] for c in configs if c["WARP_SPECIALIZE"])


def test_a_bucket_s_cases_are_swept_on_the_same_configs():
    by_bucket = {}
    for case in TASK.cases:
        labels = [sweep.label(c) for c in sweep.grid(MODULE, case.params, SMS, 40)]
        by_bucket.setdefault(MODULE._bucket(case.params["S"]), []).append(labels)
    shared = [lists for lists in by_bucket.values() if len(lists) > 1]
    assert shared and all(lists[0] == other for lists in shared for other in lists[1:])


def test_wide_grid_adds_tiles_stages_and_warps():
    params = TASK.cases[0].params
    narrow, wide = sweep.grid(MODULE, params, SMS, 10 ** 6), sweep.grid(MODULE, params, SMS, 10 ** 6, wide=True)
    seen = lambda configs, name: {c[name] for c in configs}
    assert seen(wide, "num_stages") - seen(narrow, "num_stages") == {1}
    assert seen(wide, "num_warps") - seen(narrow, "num_warps") == {2}
    assert (32, 64) in {(c["BLOCK_M"], c["BLOCK_N"]) for c in wide}


def test_registers_bound_the_tiles():
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "TMA": 1, "WARP_SPECIALIZE": 0}
    assert not sweep.fits(tile)  # 192 fp32 accumulator and score registers a thread
    assert sweep.fits({**tile, "num_warps": 8})
    assert sweep.fits({**tile, "WARP_SPECIALIZE": 1})  # a second consumer group holds half


@pytest.mark.slow  # a child process per case: `make test-fast` leaves it out
def test_smoke_run_writes_its_tables(tmp_path):
    row, summary = smoke_run("attention_sweep", tmp_path)
    assert (row["task"], row["case"]) == ("flash_attention", "B=1 H=2 S=65 fp16")
    assert f"| flash_attention | B=1 H=2 S=65 fp16 | short | {row['label']} |" in summary
    assert '    "short": (("BLOCK_M", ' in summary and "vs SDPA" in summary
