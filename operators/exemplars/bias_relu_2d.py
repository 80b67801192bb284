"""bias_relu_2d(x, bias) -> relu(x + bias[None, :]) for a 2-D x: a fused epilogue over 2-D tiles."""

import torch
import triton
import triton.language as tl


@triton.jit
def _bias_relu_kernel(x_ptr, bias_ptr, out_ptr,
                      M, N,
                      stride_xm, stride_om,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    # The bias row is loaded once per tile and broadcast down the rows.
    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = tl.maximum(x + bias[None, :], 0.0)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_relu_2d(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2 and bias.shape == (x.shape[1],), f"shapes {tuple(x.shape)} and {tuple(bias.shape)}"
    assert x.stride(1) == 1 and bias.is_contiguous(), "rows and bias must be contiguous"
    M, N = x.shape
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
    _bias_relu_kernel[grid](x, bias, out, M, N, x.stride(0), out.stride(0),
                            BLOCK_M=32, BLOCK_N=64, num_warps=4)
    return out
