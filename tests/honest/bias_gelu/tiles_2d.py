import math

import torch
import triton
import triton.language as tl

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@triton.jit
def _gelu_tanh(u, k: tl.constexpr):
    z = k * (u + 0.044715 * u * u * u)
    t = 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)
    return 0.5 * u * (1.0 + t)


@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, out_ptr, M, N, stride_m,
                     K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    ptrs = x_ptr + rows[:, None] * stride_m + cols[None, :]
    x = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = _gelu_tanh(x + b[None, :], K)
    tl.store(out_ptr + rows[:, None] * stride_m + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, f"x must be 2-D, got {x.dim()}-D"
    assert bias.shape[0] == x.shape[1], "bias length must match x's last dimension"
    x = x.contiguous()
    bias = bias.contiguous()
    M, N = x.shape
    out = torch.empty_like(x)
    BLOCK_M, BLOCK_N = 16, 128
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    bias_gelu_kernel[grid](x, bias, out, M, N, x.stride(0), K=SQRT_2_OVER_PI,
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4)
    return out
