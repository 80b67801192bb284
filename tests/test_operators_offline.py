"""Offline operators: valid, different, deterministic variants of launch configurations and block sizes."""

import ast
import pathlib
import random

import pytest

from benchmarks import registry
from evo.records import make_candidate
from operators import knobs, offline, parsing
from operators.context import OperatorContext

TASKS = registry.load().tasks(suite="builtin")

HONEST = pathlib.Path(__file__).parent / "honest"
LITERAL_VECTOR_ADD = (HONEST / "vector_add" / "tutorial_contiguous.py").read_text()
"""A vector add whose knobs are literal launch keywords (no per-shape table): the tutorial's."""
BACKENDS = ("cuda", "rocm", "interpreter")


def seeds(task):
    return make_candidate(task.name, task.baseline_source, island=1, generation=4)


def is_valid(task, source):
    return parsing.check_module(source, task.entry_point) == ""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_mutations_are_valid_and_different(task, backend):
    parent = seeds(task)
    rng = random.Random(7)
    for _ in range(8):
        child = offline.mutate(task, parent, rng, backend)
        assert is_valid(task, child.source)
        assert child.id != parent.id and child.parents == (parent.id,)
        assert (child.operator, child.island, child.generation) == ("offline_mutation", 1, parent.generation + 1)
        parent = child


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_crossover_children_differ_from_both_parents(task):
    rng = random.Random(3)
    a = offline.mutate(task, seeds(task), rng, "cuda")
    b = offline.mutate(task, seeds(task), rng, "cuda")
    for _ in range(5):
        child = offline.crossover(task, a, b, rng, "cuda", OperatorContext(generation=9, island=3))
        assert is_valid(task, child.source)
        assert child.id not in (a.id, b.id) and child.parents == (a.id, b.id)
        assert (child.generation, child.island, child.operator) == (9, 3, "offline_crossover")


def test_same_seed_same_children():
    task = registry.load().get("vector_add")
    def chain(seed):
        rng, parent, out = random.Random(seed), seeds(task), []
        for _ in range(10):
            parent = offline.mutate(task, parent, rng, "rocm")
            out.append(parent.id)
        return out
    assert chain(11) == chain(11)
    assert chain(11) != chain(12)


def test_amd_knobs_only_on_rocm():
    task = registry.load().get("matmul")
    rocm = offline.knob_space(task, task.baseline_source, "rocm")
    cuda = offline.knob_space(task, task.baseline_source, "cuda")
    amd_only = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
    assert all(any(k.endswith(name) for k in rocm) for name in amd_only)
    assert not any(k.endswith(name) for k in cuda for name in amd_only)
    rng = random.Random(0)
    for _ in range(30):
        child = offline.mutate(task, seeds(task), rng, "cuda")
        assert not any(f"{name}=" in child.source for name in amd_only)


def test_knob_values_respect_the_bounds():
    task = registry.load().get("matmul")
    space = offline.knob_space(task, task.baseline_source, "cuda")
    tiles = [v for k, v in space.items() if k.endswith(("BLOCK_M", "BLOCK_N", "BLOCK_K"))]
    assert tiles and all(min(v) >= 16 and max(v) <= 256 for v in tiles)
    assert all(set(v) <= {1, 2, 4, 8, 16} for k, v in space.items() if k.endswith("num_warps"))
    assert all(set(v) <= {1, 2, 3, 4, 5} for k, v in space.items() if k.endswith("num_stages"))
    for values in space.values():
        powers = [x for x in values if x > 0]
        assert all(x & (x - 1) == 0 for x in powers) or set(values) <= {1, 2, 3, 4, 5}


def test_computed_block_sizes_are_left_alone():
    task = registry.load().get("softmax")
    space = offline.knob_space(task, task.baseline_source, "cuda")
    assert "whole_row = triton.next_power_of_2(N)" in task.baseline_source
    assert not any(key.startswith("_softmax_kernel.") for key in space)  # launch keywords are computed
    child = offline.mutate(task, seeds(task), random.Random(0), "cuda")
    assert "whole_row = triton.next_power_of_2(N)" in child.source


def test_grid_literal_moves_with_its_block_size():
    task = registry.load().get("vector_add")
    source = LITERAL_VECTOR_ADD.replace('grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)',
                                          "grid = (triton.cdiv(n_elements, 1024),)  # one program per block")
    assert "cdiv(n_elements, 1024)" in source
    child = offline.apply_knobs(task, source, {"add_kernel.BLOCK_SIZE": 256}, "cuda")
    assert "grid = (triton.cdiv(n_elements, 256),)  # one program per block" in child
    assert "BLOCK_SIZE=256" in child


def test_absent_launch_options_are_inserted_and_comments_kept():
    source = '''import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def f(x):
    # launch one program per block
    _k[(1,)](x, x.numel(),
             BLOCK=128,)
'''
    task = registry.load().get("vector_add")
    found = {k.key: k for k in knobs.find(source, "rocm")}
    assert not found["_k.num_warps"].present and found["_k.BLOCK"].value == 128
    task = type(task)(**{**task.__dict__, "entry_point": "f"})
    child = offline.apply_knobs(task, source, {"_k.num_warps": 8, "_k.waves_per_eu": 2, "_k.BLOCK": 64}, "rocm")
    assert "# launch one program per block" in child
    call = [n for n in ast.walk(ast.parse(child)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)][0]
    assert {kw.arg: kw.value.value for kw in call.keywords} == {"BLOCK": 64, "num_warps": 8, "waves_per_eu": 2}


def test_autotuned_kernel_is_tuned_through_its_configs_not_its_launch():
    source = '''import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def vector_add(x, y):
    _k[(1,)](x, x.numel())
'''
    task = registry.load().get("vector_add")
    space = offline.knob_space(task, source, "cuda")
    assert set(space) == {"_k.configs[0].BLOCK", "_k.configs[0].num_warps", "_k.configs[0].num_stages"}
    child = offline.mutate(task, make_candidate(task.name, source), random.Random(0), "cuda")
    assert "_k[(1,)](x, x.numel())" in child.source  # the launch gets no option the configs own


def test_a_source_without_knobs_says_so():
    source = '''import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def vector_add(x, y, **options):
    _k[(1,)](x, x.numel(), BLOCK=triton.next_power_of_2(x.numel()), **options)
'''
    task = registry.load().get("vector_add")
    assert offline.knob_space(task, source, "cuda") == {}
    with pytest.raises(offline.NoKnobsError, match="no tunable"):
        offline.mutate(task, make_candidate(task.name, source), random.Random(0), "cuda")


def test_sweep_enumerates_the_space_within_the_cap():
    task = registry.load().get("vector_add")
    settings = list(offline.sweep(task, LITERAL_VECTOR_ADD, "cuda"))
    space = offline.knob_space(task, LITERAL_VECTOR_ADD, "cuda")
    expected = 1
    for values in space.values():
        expected *= len(values)
    assert len(settings) == expected
    sources = {offline.apply_knobs(task, LITERAL_VECTOR_ADD, s, "cuda") for s in settings[:40]}
    assert len(sources) == 40 and all(is_valid(task, s) for s in sources)
