"""Baseline: out[i] = sum_j x[i, j], BLOCK_M rows per program, looping over the row in chunks."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr,
                    M, N,
                    stride_xm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    # Accumulate lane-wise in fp32 and reduce once at the end.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=1)
    tl.store(out_ptr + rows, total.to(out_ptr.dtype.element_ty), mask=row_mask)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    assert x.stride(1) == 1, "rows must be contiguous"
    M, N = x.shape
    out = torch.empty((M,), dtype=x.dtype, device=x.device)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)
    _row_sum_kernel[grid](x, out, M, N, x.stride(0),
                          BLOCK_M=4, BLOCK_N=512, num_warps=4, num_stages=2)
    return out
