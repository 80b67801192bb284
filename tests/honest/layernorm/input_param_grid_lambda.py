from typing import Tuple

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_rows_kernel(input, weight, bias, output, M, N, eps, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, BLOCK_N)
    m = (r[:, None] < M) & (c[None, :] < N)
    x = tl.load(input + r[:, None] * N + c[None, :], mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / N
    xc = tl.where(m, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=1) / N + eps)
    w = tl.load(weight + c, mask=c < N, other=0.0).to(tl.float32)
    b = tl.load(bias + c, mask=c < N, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(output + r[:, None] * N + c[None, :], y.to(output.dtype.element_ty), mask=m)


def layer_norm(input: torch.Tensor, normalized_shape: Tuple[int], weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> torch.Tensor:
    N = normalized_shape[-1]
    M = input.numel() // N
    output = torch.empty_like(input)
    grid = lambda meta: (triton.cdiv(M, meta["ROWS"]),)
    layer_norm_rows_kernel[grid](input, weight, bias, output, M, N, eps, ROWS=2,
                                 BLOCK_N=triton.next_power_of_2(N))
    return output


def layernorm(x, weight, bias):
    return layer_norm(x, (x.shape[-1],), weight, bias)
