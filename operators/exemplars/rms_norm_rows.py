"""rms_norm_rows(x, weight, eps) -> x / sqrt(mean(x^2) + eps) * weight over each row: reduce, then map."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, out_ptr, N, stride_xm, stride_om, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(axis=0)
    # Pass 1: sum of squares, accumulated lane-wise in fp32 and reduced once.
    squares = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < N, other=0.0).to(tl.float32)
        squares += x * x
    inv_rms = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    # Pass 2: scale; the second read of the row usually hits in cache.
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * stride_om + cols, (x * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def rms_norm_rows(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    assert x.ndim == 2 and x.stride(1) == 1, "expected a 2-D tensor with contiguous rows"
    assert weight.shape == (x.shape[1],), f"weight shape {tuple(weight.shape)} does not match rows of {x.shape[1]}"
    M, N = x.shape
    out = torch.empty_like(x)
    _rms_norm_kernel[(M,)](x, weight, out, N, x.stride(0), out.stride(0), float(eps), BLOCK_N=256, num_warps=4)
    return out
