"""Baseline: inclusive row scan, BLOCK_M rows per program, chunk by chunk with a running carry."""

import torch
import triton
import triton.language as tl


@triton.jit
def _cumsum_kernel(x_ptr, out_ptr,
                   M, N,
                   stride_xm, stride_om,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    carry = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < N)
        # Pad with 0, the identity of +, so padded lanes leave the carry unchanged.
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        scanned = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :],
                 scanned.to(out_ptr.dtype.element_ty), mask=mask)
        # The next carry is this chunk's last inclusive sum (full chunks only; the last
        # chunk's carry is never read). Taken from `scanned` rather than `carry + sum(x)`:
        # Triton 3.6's thread-locality pass asserts on that accumulate-a-reduction loop.
        carry = tl.sum(tl.where(cols[None, :] == start + BLOCK_N - 1, scanned, 0.0), axis=1)


def cumsum(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    assert x.stride(1) == 1, "rows must be contiguous"
    M, N = x.shape
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)
    _cumsum_kernel[grid](x, out, M, N, x.stride(0), out.stride(0),
                         BLOCK_M=4, BLOCK_N=256, num_warps=4, num_stages=2)
    return out
