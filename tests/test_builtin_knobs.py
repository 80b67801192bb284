"""Per-shape knob tables of the built-in baselines: every listed setting is correct, and the
offline operators search them per bucket, switching designs as well as tuning them."""

import itertools
import math
import random

import pytest
import torch
from triton.runtime.jit import KernelInterface

from benchmarks import registry
from benchmarks.builtin import common
from benchmarks.listing import task_summary
from evo.records import make_candidate
from kernel_launches import Recorder
from operators import knobs, offline, tables
from operators.context import OperatorContext
from task_checks import import_file, mismatch

SUITE = registry.builtin()
TABLED = [task for task in SUITE.tasks() if tables.space(task.baseline_source)["buckets"]]
SAMPLES_PER_DESIGN = 3
FULL_PRODUCT_LIMIT = 64
"""Design combinations run in full up to this many; beyond it (the matmul baselines: 480 and
96; matmul's had run 27 minutes of a CI run unfinished), every pair of design values instead.
tests/test_matmul_designs.py runs the matmul designs whose interplay the launchers decide."""
PERSISTENT_TEST_PROGRAMS = 2
"""A persistent grid below the interpreter cases' block count, so its loop really walks blocks."""
ALIGNED_CASES = {
    # task: params whose row lengths (and, for transpose, M) are multiples of 8, so only the
    # padding between rows decides whether the launcher may turn the ALIGN hint on
    "softmax": {"M": 3, "N": 1000, "dtype": "float32"},
    "rmsnorm": {"M": 3, "N": 1000, "dtype": "float16"},
    "layernorm": {"M": 3, "N": 1000, "dtype": "bfloat16"},
    "row_sum": {"M": 5, "N": 1000, "dtype": "float32"},
    "row_argmax": {"M": 5, "N": 1000, "dtype": "float16"},
    "cumsum": {"M": 3, "N": 1000, "dtype": "float32"},
    "cross_entropy": {"M": 3, "V": 1000, "dtype": "float32"},
    "embedding": {"T": 5, "V": 20, "D": 1000, "dtype": "float16"},
    "flip2d": {"M": 5, "N": 1000, "dtype": "float32"},
    "transpose": {"M": 40, "N": 1000, "dtype": "float16"},
}
ROW_PADDING_ALIGN = {0: 8, 1: 1, 8: 8}
"""Extra elements between rows -> the ALIGN the launcher must pass (tables ask for 8):
none keeps rows 8-aligned, an odd pad leaves every other row unaligned, 8 realigns them."""


def _covering(design_values: list) -> list[tuple]:
    """Returns every combination of the design values if there are at most FULL_PRODUCT_LIMIT,
    else combinations (greedy, first-found on ties) in which every value of one knob meets every
    value of every other knob at least once: each interaction of two design knobs runs."""
    combos = list(itertools.product(*design_values))
    if len(combos) <= FULL_PRODUCT_LIMIT:
        return combos
    pairs = {combo: set(itertools.combinations(enumerate(combo), 2)) for combo in combos}
    uncovered = set().union(*pairs.values())
    chosen = []
    while uncovered:
        best = max(combos, key=lambda combo: len(pairs[combo] & uncovered))
        chosen.append(best)
        uncovered -= pairs[best]
    return chosen


def _settings(task):
    """Yields (label, {knob: value}) for the design combinations (`_covering`) with a seeded
    sample of tuning values each; the same setting goes into every bucket, so every case runs it."""
    space = tables.space(task.baseline_source)
    values = space["knobs"]
    design = space["design"]
    tuning = [name for name in values if name not in design]
    rng = random.Random(f"knob-settings-{task.name}")
    design_values = [sorted({0 if v == 0 else PERSISTENT_TEST_PROGRAMS for v in values[d]})
                     if d == "PROGRAMS" else values[d] for d in design]
    for combo in _covering(design_values):
        drawn = 0
        while drawn < SAMPLES_PER_DESIGN:
            setting = dict(zip(design, combo))
            setting.update({name: rng.choice(values[name]) for name in tuning})
            sizes = [setting[n] for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK_SIZE") if n in setting]
            if math.prod(sizes) > knobs.MAX_BLOCK_ELEMENTS * (64 if "BLOCK_K" in setting else 1):
                continue  # the operators' cap on one launch's block; not offered to the search
            drawn += 1
            yield ",".join(f"{k}={v}" for k, v in setting.items()), setting


@pytest.mark.parametrize("task", TABLED, ids=lambda t: t.name)
def test_table_lists_every_knob_in_every_bucket_within_its_values(task):
    space = tables.space(task.baseline_source)
    assert set(space["design"]) <= set(space["knobs"])
    for bucket, setting in space["buckets"].items():
        assert set(setting) == set(space["knobs"]), bucket
        assert all(value in space["knobs"][name] for name, value in setting.items()), bucket


@pytest.mark.parametrize("task", [  # an elementwise, a row and a data-movement task stay fast
    pytest.param(t, marks=() if t.name in ("vector_add", "softmax", "transpose")
                 else pytest.mark.slow) for t in TABLED], ids=lambda t: t.name)
def test_every_design_is_correct_under_sampled_tuning(task, tmp_path):
    failures = []
    for index, (label, setting) in enumerate(_settings(task)):
        found = knobs.find(task.baseline_source, "interpreter")
        all_buckets = {k.key: setting[k.name] for k in found if k.key.startswith(tables.TABLE)}
        source = knobs.apply(task.baseline_source, found, all_buckets)
        path = tmp_path / f"{task.name}_{index}.py"
        path.write_text(source)
        fn = getattr(import_file(path, f"knobs_{task.name}_{index}"), task.entry_point)
        for case in task.interpreter_cases:
            why = mismatch(task, fn, task.make_inputs(case.params, 1, "cpu"))
            if why:
                failures.append(f"{label} on {case.name}: {why}")
    assert not failures, "\n".join(failures)


def _row_padded(t, pad):
    """Returns `t` (2-D) as a view whose rows sit `pad` elements further apart than their length."""
    wide = torch.zeros((t.shape[0], t.shape[1] + pad), dtype=t.dtype)
    wide[:, :t.shape[1]] = t
    return wide[:, :t.shape[1]]


@pytest.mark.parametrize("pad", sorted(ROW_PADDING_ALIGN))
@pytest.mark.parametrize("task_name", sorted(ALIGNED_CASES))
def test_alignment_hint_only_where_the_strides_allow(task_name, pad, monkeypatch):
    task = SUITE.get(task_name)
    module = import_file(common.KERNELS_DIR / f"{task_name}.py", f"aligned_{task_name}_{pad}")
    launched = []
    for name, value in list(vars(module).items()):
        if isinstance(value, KernelInterface) and "ALIGN" in value.arg_names:
            monkeypatch.setattr(module, name, Recorder(value, launched))
    args = tuple(_row_padded(a, pad) if a.ndim == 2 else a for a in task.make_inputs(ALIGNED_CASES[task_name], 1, "cpu"))
    assert all(a.stride(0) == a.shape[1] + pad for a in args if a.ndim == 2)
    why = mismatch(task, getattr(module, task.entry_point), args)
    assert not why, why
    assert [keywords["ALIGN"] for keywords in launched] == [ROW_PADDING_ALIGN[pad]]


@pytest.mark.parametrize("pad,blocks", [(0, (1, 128)), (3, (2, 64))])
def test_a_flat_flip_reverses_a_contiguous_input_end_to_end_and_a_padded_one_by_tiles(pad, blocks, monkeypatch):
    task = SUITE.get("flip2d")
    module = import_file(common.KERNELS_DIR / "flip2d.py", f"flat_flip2d_{pad}")
    module.CONFIGS = {bucket: tuple({**dict(entry), "FLAT": 1, "BLOCK_M": 2, "BLOCK_N": 64}.items())
                      for bucket, entry in module.CONFIGS.items()}
    launched = []
    monkeypatch.setattr(module, "_flip2d_kernel", Recorder(module._flip2d_kernel, launched))
    x = _row_padded(task.make_inputs({"M": 5, "N": 129, "dtype": "float32"}, 1, "cpu")[0], pad)
    why = mismatch(task, module.flip2d, (x,))
    assert not why, why
    assert {(keywords["BLOCK_M"], keywords["BLOCK_N"]) for keywords in launched} == {blocks}


def test_every_aligned_baseline_has_an_odd_stride_case():
    declared = {t.name for t in TABLED if "ALIGN" in tables.space(t.baseline_source)["knobs"]}
    assert declared == set(ALIGNED_CASES)


def test_mutation_switches_designs_and_tunes_one_bucket_at_a_time():
    task = SUITE.get("softmax")
    parent = make_candidate(task.name, task.baseline_source)
    before = {k.key: k.value for k in knobs.find(parent.source, "cuda")}
    kinds = set()
    for seed in range(40):
        child = offline.mutate(task, parent, random.Random(seed), "cuda")
        after = {k.key: k.value for k in knobs.find(child.source, "cuda")}
        moved = [key for key in before if before[key] != after[key]]
        assert len(moved) == 1 and moved[0].startswith("CONFIGS["), moved
        kinds.add("design" if child.strategy.startswith("offline: design") else "tuning")
        assert (child.strategy.startswith("offline: design")) == (moved[0].endswith((".LOOP", ".PROGRAMS")))
    assert kinds == {"design", "tuning"}
    same = [offline.mutate(task, parent, random.Random(5), "cuda").id for _ in range(2)]
    assert same[0] == same[1]


def test_crossover_takes_whole_bucket_entries_from_the_second_parent():
    task = SUITE.get("row_sum")
    found = knobs.find(task.baseline_source, "cuda")
    b_settings = {"CONFIGS[short].BLOCK_M": 8, "CONFIGS[short].ACC_2D": 0,
                  "CONFIGS[long].BLOCK_N": 2048, "CONFIGS[long].num_warps": 8}
    a = make_candidate(task.name, task.baseline_source)
    b = make_candidate(task.name, knobs.apply(task.baseline_source, found, b_settings))
    taken = set()
    for seed in range(12):
        child = offline.crossover(task, a, b, random.Random(seed), "cuda", OperatorContext(generation=2, island=0))
        note = child.strategy.removeprefix("offline: ").split("; ")[0]
        assert note.startswith("from B: "), child.strategy
        keys = {item.split("=")[0] for item in note.removeprefix("from B: ").split(", ")}
        buckets = {key.split("]")[0] + "]" for key in keys}
        # an entry comes whole: every knob B changed in a bucket it took, none from one it did not
        assert keys == {key for key in b_settings if key.split("]")[0] + "]" in buckets}, note
        taken.add(frozenset(buckets))
    assert len(taken) > 1  # the seed decides which entries


def test_tasks_json_lists_each_tasks_knob_space():
    summary = task_summary(SUITE.get("softmax"))["knob_space"]
    assert set(summary["buckets"]) == {"small", "short", "n1k", "n2k", "n4k", "n8k", "n16k", "long"}
    assert summary["design"] == ["LOOP", "PROGRAMS"]
    assert summary["knobs"]["LOOP"] == [0, 1]
    assert summary["bucket_rule"] == (
        '_bucket(M, N): if M * N <= 1 << 21: return "small"; return ("short" if N <= 256 else "n1k" if N <= 1024 '
        'else "n2k" if N <= 2048 else "n4k" if N <= 4096 else "n8k" if N <= 8192 else "n16k" if N <= 16384 '
        'else "long")')
    untabled = [t.name for t in SUITE.tasks() if not task_summary(t)["knob_space"]["buckets"]]
    assert not untabled, f"built-in baselines without a per-shape table: {untabled}"
