"""cumsum_rows(x) -> the inclusive prefix sum along each row; a carry links the chunks of a long row."""

import torch
import triton
import triton.language as tl


@triton.jit
def _cumsum_kernel(x_ptr, out_ptr, N, stride_xm, stride_om, BLOCK_N: tl.constexpr):
    row = tl.program_id(axis=0)
    carry = tl.zeros((1,), dtype=tl.float32)  # the running total of the chunks already done
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        scanned = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * stride_om + cols, scanned.to(out_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum_rows(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2 and x.stride(1) == 1, "expected a 2-D tensor with contiguous rows"
    M, N = x.shape
    out = torch.empty_like(x)
    _cumsum_kernel[(M,)](x, out, N, x.stride(0), out.stride(0), BLOCK_N=128, num_warps=1)
    return out
