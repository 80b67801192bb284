"""The matmul baselines' designs (persistent grid, TMA descriptors, TMA-stored epilogues,
warp specialization, split-K, the row-aligned copy by row tiles or as a flat stream, C with
padded rows) are right whether rows are 16-byte aligned or not, TMA copies exactly the operands
whose rows are not (by the copy the table names), a padded C is stored by TMA and returned as a
view of its N columns, and warp specialization (which the compiler takes only with TMA loads
and pointer stores) comes only with both."""

import importlib.util
import itertools

import pytest
import torch

from benchmarks import registry
from benchmarks.builtin import common
from kernel_launches import Recorder

pytestmark = pytest.mark.slow  # every design through the interpreter: `make test-fast` leaves it out

SUITE = registry.builtin()
SMALL_TILES = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2}
"""Tiles small enough that every shape below has several tiles and K steps per unit."""
SHAPES = {
    # name: (M, N, K), fp16 rows of 2 bytes per element: 16-byte aligned when N, K are multiples of 8
    "all aligned": (40, 48, 40),
    "K unaligned": (40, 48, 37),
    "N unaligned": (40, 45, 40),
}


def _module(task_name, config):
    spec = importlib.util.spec_from_file_location(f"designs_{task_name}", common.KERNELS_DIR / f"{task_name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.CONFIGS = {bucket: tuple({**dict(entry), **config}.items()) for bucket, entry in module.CONFIGS.items()}
    return module


def _inputs(task_name, M, N, K):
    params = {"M": M, "N": N, "K": K, "dtype": "float16"}
    return SUITE.get(task_name).make_inputs({**params, "B": 3} if task_name == "batched_matmul" else params, 7, "cpu")


def _designs(task_name):
    """Yields every design setting the launcher tells apart (FLATTEN and WARP_SPECIALIZE are
    compiler hints the interpreter does not read, but warp specialization, taken with TMA loads
    only, makes the launcher store through pointers; so do split-K's partial sums)."""
    for persistent, tma, epilogue, ws in itertools.product((0, 1), (0, 1), (0, 1, 2), (0, 1)):
        if ws and not (tma and epilogue == 1):
            continue
        design = {"PERSISTENT": persistent, "TMA": tma, "EPILOGUE": epilogue, "FLATTEN": persistent,
                  "WARP_SPECIALIZE": ws}
        yield design if task_name != "matmul" else {**design, "SPLIT_K": 1}
        if task_name == "matmul" and epilogue == 2 and not ws:
            yield {**design, "SPLIT_K": 3}
        if persistent and tma and epilogue == 1 and not ws:
            yield {**design, "COPY": 1, **({"SPLIT_K": 1} if task_name == "matmul" else {})}
        if tma and epilogue and not ws:
            yield {**design, "PAD_C": 1, **({"SPLIT_K": 1} if task_name == "matmul" else {})}
    if task_name == "matmul":  # split-K sums into a contiguous C: PAD_C then leaves it so
        yield {"PERSISTENT": 0, "TMA": 1, "EPILOGUE": 1, "FLATTEN": 0, "WARP_SPECIALIZE": 0, "SPLIT_K": 3,
               "PAD_C": 1}


@pytest.mark.parametrize("shape_name", sorted(SHAPES))
@pytest.mark.parametrize("task_name", ["matmul", "batched_matmul"])
def test_every_design_is_right_on_aligned_and_unaligned_rows(task_name, shape_name):
    task = SUITE.get(task_name)
    args = _inputs(task_name, *SHAPES[shape_name])
    expected = task.reference(*args).double()
    atol, rtol = task.tolerance["float16"]
    wrong = []
    for design in _designs(task_name):
        out = getattr(_module(task_name, {**SMALL_TILES, **design}), task.entry_point)(*args)
        if not torch.allclose(out.double(), expected, atol=atol, rtol=rtol):
            wrong.append(f"{design}: max error {(out.double() - expected).abs().max().item():.3g}")
    assert not wrong, "\n".join(wrong)


KERNELS = [("matmul", "_matmul_kernel"), ("batched_matmul", "_batched_matmul_kernel")]


def _launches(task_name, kernel_name, shape_name, config, monkeypatch):
    """Returns (the row copies, the main kernel's launch keywords) of one call under `config`."""
    module = _module(task_name, {**SMALL_TILES, "PERSISTENT": 1, "FLATTEN": 0, **config})
    copied, launched = [], []
    for copy_kernel in ("_copy_rows_kernel", "_copy_flat_kernel"):
        monkeypatch.setattr(module, copy_kernel, Recorder(getattr(module, copy_kernel), copied))
    monkeypatch.setattr(module, kernel_name, Recorder(getattr(module, kernel_name), launched))
    getattr(module, SUITE.get(task_name).entry_point)(*_inputs(task_name, *SHAPES[shape_name]))
    return copied, launched


@pytest.mark.parametrize("copy_design,copy_kernel", [(0, "_copy_rows_kernel"), (1, "_copy_flat_kernel")])
@pytest.mark.parametrize("task_name,kernel_name", KERNELS)
@pytest.mark.parametrize("shape_name,copies,c_stores", [("all aligned", 0, 2), ("K unaligned", 1, 2),
                                                        ("N unaligned", 1, 0)])
def test_tma_copies_only_operands_whose_rows_are_unaligned(task_name, kernel_name, shape_name, copies,
                                                           c_stores, copy_design, copy_kernel, monkeypatch):
    config = {"TMA": 1, "EPILOGUE": 2, "WARP_SPECIALIZE": 0, "COPY": copy_design}
    copied, launched = _launches(task_name, kernel_name, shape_name, config, monkeypatch)
    assert [launch["kernel"] for launch in copied] == [copy_kernel] * copies
    assert [(k["TMA"], k["C_STORES"], k["WARP_SPECIALIZE"]) for k in launched] == [(True, c_stores, False)]


@pytest.mark.parametrize("task_name,kernel_name", KERNELS)
@pytest.mark.parametrize("tma,warp_specialize,c_stores", [(1, True, 0), (0, False, 1)])
def test_warp_specialization_comes_only_with_tma_loads_and_pointer_stores(task_name, kernel_name, tma,
                                                                          warp_specialize, c_stores, monkeypatch):
    config = {"TMA": tma, "EPILOGUE": 1, "WARP_SPECIALIZE": 1}
    _, launched = _launches(task_name, kernel_name, "all aligned", config, monkeypatch)
    assert [(k["WARP_SPECIALIZE"], k["C_STORES"]) for k in launched] == [(warp_specialize, c_stores)]


@pytest.mark.parametrize("task_name,kernel_name", KERNELS)
@pytest.mark.parametrize("pad_c,c_stores,row_elements", [(0, 0, 45), (1, 2, 48)])
def test_a_padded_c_is_stored_by_tma_and_returned_as_a_view_of_its_columns(task_name, kernel_name, pad_c,
                                                                          c_stores, row_elements, monkeypatch):
    config = {"TMA": 1, "EPILOGUE": 2, "WARP_SPECIALIZE": 0, "PAD_C": pad_c}
    module = _module(task_name, {**SMALL_TILES, "PERSISTENT": 1, "FLATTEN": 0, **config})
    launched = []
    monkeypatch.setattr(module, kernel_name, Recorder(getattr(module, kernel_name), launched))
    task = SUITE.get(task_name)
    args = _inputs(task_name, *SHAPES["N unaligned"])
    out = getattr(module, task.entry_point)(*args)
    assert [k["C_STORES"] for k in launched] == [c_stores]
    assert out.shape[-1] == 45 and out.stride(-2) == row_elements
    atol, rtol = task.tolerance["float16"]
    assert torch.allclose(out.double(), task.reference(*args).double(), atol=atol, rtol=rtol)
