"""Knobs of external kernels (GEAK-eval's TritonBench-revised and ROCm): each kind found in a
small source, every rewrite of the real references valid, and an offline child of a real
reference differing from it in one knob only."""

import ast
import dataclasses
import functools
import random

import pytest

import external_suites
from benchmarks.external import load_suite
from evo.records import make_candidate
from operators import knobs, offline, parsing

SHARE_WITH_KNOBS = 0.8
"""Share of each suite's references the offline operators must be able to vary on cuda."""

AUTOTUNED = '''import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8),
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=2, num_stages=3),
    ],
    key=["M", "N"],
)
@triton.jit
def _rows(x_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pass


def rows(x):
    grid = lambda meta: (triton.cdiv(x.shape[0], meta["BLOCK_M"]),)
    _rows[grid](x, x.shape[0], x.shape[1])
    return x
'''

LAUNCHED = '''import triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def _fwd(x_ptr, n, BT: tl.constexpr, BK: tl.constexpr, BLOCK: tl.constexpr):
    pass


def fwd(x):
    BT, BK = 64, 32
    num_warps = 4
    block_m = 1 if x.dim() == 1 else 16
    block_m = min(block_m, x.shape[0])
    _fwd[(1,)](x, x.numel(), BT=BT, BK=BK, BLOCK=BLOCK_SIZE, num_warps=num_warps, num_stages=block_m)
    _fwd[(2,)](x, x.numel(), BT=16, BK=16, BLOCK_M=64, BLOCK=256, num_warps=8)
    return x
'''

UNLAUNCHED = '''import triton
import triton.language as tl


@triton.jit
def _helper(x):
    return x + 1


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, _helper(tl.load(x_ptr + offsets, mask=offsets < n)), mask=offsets < n)
'''


def _knobs(source, backend="cuda"):
    return {knob.key: knob for knob in knobs.find(source, backend)}


def _defines(source, name):
    return parsing.check_module(source, name) == ""


def test_autotune_configs_are_knobs_and_absent_options_are_inserted():
    found = _knobs(AUTOTUNED)
    assert found["_rows.configs[1].BLOCK_M"].value == 128
    assert found["_rows.configs[0].num_stages"].value == 2
    assert not found["_rows.configs[1].num_stages"].present  # left out: inserted when set
    assert not any(key.startswith("_rows.num_warps") for key in found)  # the launch is the configs'
    child = knobs.apply(AUTOTUNED, list(found.values()),
                        {"_rows.configs[1].num_stages": 4, "_rows.configs[1].BLOCK_M": 256})
    assert 'triton.Config({"BLOCK_M": 256, "BLOCK_N": 64}, num_warps=8, num_stages=4),' in child
    assert _defines(child, "rows")


@pytest.mark.parametrize("kept", [1, 2, 3])
def test_keeping_one_config_pins_the_kernel_to_it(kept):
    found = _knobs(AUTOTUNED)
    assert found["_rows.configs"].values == (0, 1, 2, 3)
    settings = {"_rows.configs": kept, "_rows.configs[1].num_warps": 16, "_rows.configs[0].BLOCK_N": 16}
    child = knobs.apply(AUTOTUNED, list(found.values()), settings)
    (decorator,) = [node for node in ast.walk(ast.parse(child)) if isinstance(node, ast.Call)
                    and getattr(node.func, "attr", "") == "autotune"]
    (configs,) = [kw.value for kw in decorator.keywords if kw.arg == "configs"]
    expected = {1: '{"BLOCK_M": 64, "BLOCK_N": 16}, num_warps=4, num_stages=2',
                2: '{"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=16',
                3: '{"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=2, num_stages=3'}[kept]
    assert [ast.unparse(c) for c in configs.elts] == [ast.unparse(ast.parse(f"triton.Config({expected})").body[0].value)]
    assert _defines(child, "rows") and "key=[\"M\", \"N\"]" in child
    assert "_rows.configs" not in _knobs(child)  # a list of one: nothing left to choose


def test_literals_a_launch_passes_on_are_knobs_computed_ones_are_not():
    found = _knobs(LAUNCHED)
    assert {key: (k.kind, k.value, k.launch) for key, k in found.items() if not key.startswith("_fwd.")} == {
        "<module>.BLOCK_SIZE": ("block", 1024, "_fwd"), "fwd.BT": ("tile", 64, "_fwd"),
        "fwd.BK": ("tile", 32, "_fwd"), "fwd.num_warps": ("num_warps", 4, "_fwd")}
    assert "fwd.block_m" not in found and "_fwd.num_stages" in found  # the literal launch's, inserted
    child = knobs.apply(LAUNCHED, list(found.values()), {"fwd.BK": 64, "fwd.num_warps": 8, "_fwd.BT": 32})
    assert "BT, BK = 64, 64" in child and "num_warps = 8" in child and "BT=32, BK=16" in child


def test_a_kernel_launched_from_outside_gets_its_options_through_heuristics():
    found = _knobs(UNLAUNCHED, "rocm")
    assert set(found) == {"add_kernel.num_warps", "add_kernel.num_stages", "add_kernel.waves_per_eu"}
    child = knobs.apply(UNLAUNCHED, list(found.values()), {"add_kernel.num_warps": 8, "add_kernel.waves_per_eu": 2})
    assert ("@triton.heuristics({'num_warps': lambda args: 8})\n"
            "@triton.heuristics({'waves_per_eu': lambda args: 2})\n@triton.jit\ndef add_kernel(") in child
    assert child.count("@triton.jit\ndef _helper(x)") == 1  # a helper kernels call is not launched


@functools.cache
def _suite(name):
    return load_suite(name, str(external_suites.suite("GEAK-eval")))


@pytest.mark.parametrize("suite", ["tritonbench-revised", "rocm"])
def test_most_external_references_have_knobs(suite):
    tasks = _suite(suite)
    bare = [task.name for task in tasks if not offline.knob_space(task, task.baseline_source, "cuda")]
    assert len(bare) <= (1 - SHARE_WITH_KNOBS) * len(tasks), bare


@pytest.mark.parametrize("suite, backend", [("tritonbench-revised", "cuda"), ("rocm", "rocm")])
def test_every_knob_of_every_reference_rewrites_to_a_module_with_its_entry_point(suite, backend):
    rng = random.Random(0)
    for task in _suite(suite):
        found = knobs.find(task.baseline_source, backend)
        for knob in found:
            value = rng.choice([v for v in knob.values if v != knob.value])
            child = knobs.apply(task.baseline_source, found, {knob.key: value})
            assert child != task.baseline_source, (task.name, knob.key)
            assert _defines(child, task.entry_point), (task.name, knob.key, value)


def _one_knob_apart(task, parent, child, backend):
    """Returns the key of the one knob whose setting turns `parent` into `child`, else None."""
    found = knobs.find(parent, backend)
    for knob in found:
        for value in knob.values:
            if value != knob.value and knobs.apply(parent, found, {knob.key: value}) == child:
                return knob.key
    return None


@pytest.mark.parametrize("suite, name", [("tritonbench-revised", "matmul_triton_autotune"),
                                         ("tritonbench-revised", "attention_fwd_triton1"),
                                         ("rocm", "test_add_kernel"), ("rocm", "gemm")])
def test_offline_mutation_of_a_reference_moves_one_knob(suite, name):
    (task,) = [t for t in _suite(suite) if t.name == name]
    parent = make_candidate(task.name, task.baseline_source)
    rng = random.Random(5)
    for _ in range(6):
        child = offline.mutate(task, parent, rng, "cuda")
        key = _one_knob_apart(task, parent.source, child.source, "cuda")
        assert key and key in child.strategy, child.strategy
        assert _defines(child.source, task.entry_point)


def test_unvaried_names_the_tasks_without_knobs():
    tasks = _suite("tritonbench-revised")
    unvaried = offline.unvaried(tasks, "cuda")
    assert len(unvaried) <= (1 - SHARE_WITH_KNOBS) * len(tasks)
    (task,) = [t for t in tasks if t.name == "add_value"]
    assert task.name not in unvaried
    broken = dataclasses.replace(task, name="broken", baseline_source="def f(:\n")
    bare = dataclasses.replace(task, name="bare", baseline_source="def puzzle1(x):\n    return x\n")
    assert offline.unvaried([task, broken, bare], "cuda") == {
        "broken": "task broken: source is not a valid module: syntax_error: line 1: invalid syntax",
        "bare": "no knob"}
