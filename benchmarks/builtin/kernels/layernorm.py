"""Baseline: layer norm over the last dim, one program per row, the whole row in one block."""

import torch
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, weight_ptr, bias_ptr, out_ptr,
                      n_cols,
                      stride_x_row, stride_out_row,
                      eps,
                      BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # Pad with 0, the identity of the sums below; the centred values are re-masked.
    x = tl.load(x_ptr + row * stride_x_row + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    variance = tl.sum(centred * centred, axis=0) / n_cols
    inv_std = 1.0 / tl.sqrt(variance + eps)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    out = centred * inv_std * weight + bias
    tl.store(out_ptr + row * stride_out_row + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected x of shape [M, N], got {tuple(x.shape)}"
    n_rows, n_cols = x.shape
    for name, t in (("weight", weight), ("bias", bias)):
        assert t.shape == (n_cols,), f"{name} shape {tuple(t.shape)} != ({n_cols},)"
        assert t.dtype == x.dtype and t.is_contiguous(), f"{name} must be contiguous {x.dtype}"
    assert x.stride(1) == 1, "rows of x must be contiguous"
    out = torch.empty_like(x)
    block_size = triton.next_power_of_2(n_cols)
    _layernorm_kernel[(n_rows,)](x, weight, bias, out, n_cols, x.stride(0), out.stride(0), 1e-5,
                                 BLOCK_SIZE=block_size, num_warps=8, num_stages=1)
    return out
