"""Elementwise add of two vectors in Triton."""
from __future__ import annotations

import logging
from typing import Optional, Tuple

import torch
import triton
import triton.language as tl

__all__ = ["vector_add"]

logger = logging.getLogger(__name__)

DEFAULT_BLOCK: int = 1024


@triton.jit
def _load_f32(ptr, offsets, mask):
    return tl.load(ptr + offsets, mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements: int, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    result = _load_f32(x_ptr, offsets, mask) + _load_f32(y_ptr, offsets, mask)
    tl.store(out_ptr + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


def _launch_config(n_elements: int, block: Optional[int] = None) -> Tuple[Tuple[int], int]:
    block = block or DEFAULT_BLOCK
    return (triton.cdiv(n_elements, block),), block


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if x.shape != y.shape:
        raise ValueError(f"shape mismatch: {tuple(x.shape)} vs {tuple(y.shape)}")
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid, block = _launch_config(n_elements)
    logger.debug("vector_add: n=%d grid=%s block=%d", n_elements, grid, block)
    _add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block)
    return out
