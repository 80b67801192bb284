"""col_sum(x) -> the sum of each column of a 2-D tensor: each program owns a strip of columns."""

import torch
import triton
import triton.language as tl


@triton.jit
def _col_sum_kernel(x_ptr, out_ptr, M, N, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(axis=0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # Walk down the rows; consecutive columns are adjacent in memory, so loads coalesce.
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & col_mask[None, :]
        acc += tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=col_mask)


def col_sum(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    assert x.stride(1) == 1, "rows must be contiguous"
    M, N = x.shape
    out = torch.empty((N,), dtype=x.dtype, device=x.device)
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]),)
    _col_sum_kernel[grid](x, out, M, N, x.stride(0), BLOCK_M=16, BLOCK_N=64, num_warps=4)
    return out
