import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class LaunchConfig:
    block_m: int = 8
    block_n: int = 64
    num_warps: int = 4


CONFIG = LaunchConfig()


@triton.jit
def _tanh(z):
    return 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)


@triton.jit
def _bias_gelu_tile(x_ptr, bias_ptr, out_ptr, M, N, sxm, sxn, som, son,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N
    mask = mask_m[:, None] & mask_n[None, :]
    x = tl.load(x_ptr + offs_m[:, None] * sxm + offs_n[None, :] * sxn, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0)
    u = x.to(tl.float32) + bias.to(tl.float32)[None, :]
    out = 0.5 * u * (1.0 + _tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)))
    tl.store(out_ptr + offs_m[:, None] * som + offs_n[None, :] * son, out.to(out_ptr.dtype.element_ty),
             mask=mask)


def _launch(kernel, config: LaunchConfig, x, bias, out):
    M, N = x.shape
    grid = (triton.cdiv(M, config.block_m), triton.cdiv(N, config.block_n))
    kernel[grid](x, bias, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                 BLOCK_M=config.block_m, BLOCK_N=config.block_n, num_warps=config.num_warps)


launch_bias_gelu = functools.partial(_launch, _bias_gelu_tile, CONFIG)


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    launch_bias_gelu(x, bias, out)
    return out
