"""Baseline: RMS norm over the last dim, one program per row, the whole row in one block."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, weight_ptr, out_ptr,
                    n_cols,
                    stride_x_row, stride_out_row,
                    eps,
                    BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # Pad with 0, the identity of the sum of squares.
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_out_row + cols,
             (x * inv_rms * weight).to(out_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected x of shape [M, N], got {tuple(x.shape)}"
    n_rows, n_cols = x.shape
    assert weight.shape == (n_cols,), f"weight shape {tuple(weight.shape)} != ({n_cols},)"
    assert weight.dtype == x.dtype, f"dtype mismatch: {x.dtype} vs {weight.dtype}"
    assert x.stride(1) == 1 and weight.is_contiguous(), "rows of x and weight must be contiguous"
    out = torch.empty_like(x)
    block_size = triton.next_power_of_2(n_cols)
    _rmsnorm_kernel[(n_rows,)](x, weight, out, n_cols, x.stride(0), out.stride(0), 1e-6,
                               BLOCK_SIZE=block_size, num_warps=8, num_stages=1)
    return out
