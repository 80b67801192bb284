"""transpose_2d(x) -> x.T made contiguous, for any input strides: a 2-D copy through tiles."""

import torch
import triton
import triton.language as tl


@triton.jit
def _transpose_kernel(x_ptr, out_ptr,
                      M, N,
                      stride_xm, stride_xn, stride_om, stride_on,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    # Store the tile transposed: out[c, r] = x[r, c]. Strides, not shapes, say where things live.
    tl.store(out_ptr + cols[None, :] * stride_om + rows[:, None] * stride_on, tile, mask=mask)


def transpose_2d(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
    _transpose_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                            BLOCK_M=32, BLOCK_N=32, num_warps=4)
    return out
