"""row_max(x) -> the maximum of each row of a 2-D tensor, looping over long rows in chunks."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_max_kernel(x_ptr, out_ptr, N, stride_xm, BLOCK_N: tl.constexpr):
    row = tl.program_id(axis=0)
    # Pad with -inf, the identity of max, so masked lanes never win.
    acc = tl.full((BLOCK_N,), -float("inf"), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        acc = tl.maximum(acc, x)
    tl.store(out_ptr + row, tl.max(acc, axis=0).to(out_ptr.dtype.element_ty))


def row_max(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2 and x.shape[1] > 0, f"expected a 2-D tensor with columns, got {tuple(x.shape)}"
    assert x.stride(1) == 1, "rows must be contiguous"
    M, N = x.shape
    out = torch.empty((M,), dtype=x.dtype, device=x.device)
    _row_max_kernel[(M,)](x, out, N, x.stride(0), BLOCK_N=256, num_warps=2)
    return out
