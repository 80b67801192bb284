"""Baseline: one program per row, the whole row in one block, masked with -inf."""

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    out = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * stride_row + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def row_softmax(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2 and x.is_contiguous(), f"expected a contiguous 2-D tensor, got {tuple(x.shape)}"
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0),
                               BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return out
