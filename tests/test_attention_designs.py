"""The flash attention baseline's designs (TMA descriptors, heavy tiles first, warp specialization,
the diagonal split off) are right on odd sequence lengths, and the launcher takes TMA only
where the tensors allow it and warp specialization only as the compiler can split it: one
masked loop ending in pointer stores."""

import importlib.util
import itertools

import pytest
import torch

from benchmarks import registry
from benchmarks.builtin import common
from kernel_launches import Recorder

pytestmark = pytest.mark.slow  # every design through the interpreter: `make test-fast` leaves it out

TASK = registry.builtin().get("flash_attention")
TILES = ((16, 32), (32, 16))  # key tiles wider and narrower than query tiles: partial diagonal blocks both ways


def _module(config):
    spec = importlib.util.spec_from_file_location("designs_attention", common.KERNELS_DIR / "flash_attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.CONFIGS = {bucket: tuple({**dict(entry), **config}.items()) for bucket, entry in module.CONFIGS.items()}
    return module


def _launched(config, args, monkeypatch):
    """Returns (the output, the kernel's launch keywords) of one call under `config`."""
    module = _module(config)
    launched = []
    monkeypatch.setattr(module, "_attention_kernel", Recorder(module._attention_kernel, launched))
    return module.flash_attention(*args), launched


def _misaligned(x):
    """Returns a contiguous copy of `x` whose data starts 2 bytes past a 16-byte boundary."""
    storage = torch.empty(x.numel() + 1, dtype=x.dtype)
    out = storage[1:].view(x.shape)
    out.copy_(x)
    return out


@pytest.mark.parametrize("case", TASK.interpreter_cases[1:], ids=lambda c: c.name)
def test_every_design_is_right_on_odd_sequence_lengths(case):
    args = TASK.make_inputs(case.params, 5, "cpu")
    expected = TASK.reference(*args).double()
    atol, rtol = TASK.tolerance["float16"]
    wrong = []
    for (block_m, block_n), tma, heavy, ws, diagonal in itertools.product(TILES, (0, 1), (0, 1), (0, 1), (0, 1)):
        if ws and not (tma and diagonal):  # the launcher takes it with TMA only, and then masks every block
            continue
        config = {"BLOCK_M": block_m, "BLOCK_N": block_n, "TMA": tma, "HEAVY_FIRST": heavy,
                  "WARP_SPECIALIZE": ws, "MASK_DIAGONAL": diagonal}
        error = (_module(config).flash_attention(*args).double() - expected).abs()
        if (error > atol + rtol * expected.abs()).any():
            wrong.append(f"{config}: max error {error.max().item():.3g}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("ws,tma_store,mask_diagonal", [(0, True, 1), (1, False, 0)])
def test_warp_specialization_takes_one_masked_loop_and_pointer_stores(ws, tma_store, mask_diagonal, monkeypatch):
    args = TASK.make_inputs(TASK.interpreter_cases[1].params, 5, "cpu")
    config = {"TMA": 1, "WARP_SPECIALIZE": ws, "MASK_DIAGONAL": 1, "BLOCK_M": 16, "BLOCK_N": 32}
    _, launched = _launched(config, args, monkeypatch)
    assert [(k["TMA"], k["TMA_STORE"], k["WARP_SPECIALIZE"], k["MASK_DIAGONAL"]) for k in launched] == \
        [(True, tma_store, bool(ws), mask_diagonal)]


def test_tma_only_where_every_tensor_is_aligned(monkeypatch):
    q, k, v = TASK.make_inputs(TASK.interpreter_cases[1].params, 5, "cpu")
    config = {"TMA": 1, "WARP_SPECIALIZE": 1, "BLOCK_M": 16, "BLOCK_N": 32}
    out, launched = _launched(config, (q, k, _misaligned(v)), monkeypatch)
    assert [(kw["TMA"], kw["TMA_STORE"], kw["WARP_SPECIALIZE"]) for kw in launched] == [(False, False, False)]
    expected = TASK.reference(q, k, v).double()
    atol, rtol = TASK.tolerance["float16"]
    assert ((out.double() - expected).abs() <= atol + rtol * expected.abs()).all()
