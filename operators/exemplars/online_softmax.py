"""online_softmax(x) -> softmax over rows too long for one block: running max and rescaled sum."""

import torch
import triton
import triton.language as tl


@triton.jit
def _online_softmax_kernel(x_ptr, out_ptr, N, stride_xm, stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(axis=0)
    row_max = tl.full((BLOCK_N,), -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_N,), dtype=tl.float32)
    # Pass 1: per lane, keep the max seen so far and the sum of exp(x - max), rescaled when max grows.
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(row_max, x)
        safe_max = tl.where(new_max == -float("inf"), 0.0, new_max)  # lanes that saw only padding
        row_sum = row_sum * tl.exp(row_max - safe_max) + tl.exp(x - safe_max)
        row_max = new_max
    total_max = tl.max(row_max, axis=0)
    total = tl.sum(row_sum * tl.exp(row_max - total_max), axis=0)
    # Pass 2: normalise.
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - total_max) / total
        tl.store(out_ptr + row * stride_om + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def online_softmax(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2 and x.stride(1) == 1, "expected a 2-D tensor with contiguous rows"
    M, N = x.shape
    out = torch.empty_like(x)
    _online_softmax_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK_N=128, num_warps=4)
    return out
