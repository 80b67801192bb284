from dataclasses import dataclass
from typing import Optional

import torch
import triton
import triton.language as tl


@dataclass
class SoftmaxConfig:
    block: int = 128
    num_warps: int = 2


@triton.jit
def _softmax_kernel(input, output, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    # max
    mx = tl.full([BLOCK], float("-inf"), tl.float32)
    for k in range(0, n_cols, BLOCK):
        c = k + tl.arange(0, BLOCK)
        mx = tl.maximum(mx, tl.load(input + row * stride + c, mask=c < n_cols, other=float("-inf")).to(tl.float32))
    row_max = tl.max(mx, axis=0)
    # sum
    s = tl.zeros([BLOCK], tl.float32)
    for k in range(0, n_cols, BLOCK):
        c = k + tl.arange(0, BLOCK)
        v = tl.load(input + row * stride + c, mask=c < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(v - row_max)
    inv = 1.0 / tl.sum(s, axis=0)
    for k in range(0, n_cols, BLOCK):
        c = k + tl.arange(0, BLOCK)
        v = tl.load(input + row * stride + c, mask=c < n_cols, other=float("-inf")).to(tl.float32)
        tl.store(output + row * stride + c, (tl.exp(v - row_max) * inv).to(output.dtype.element_ty), mask=c < n_cols)


def softmax_forward(input: torch.Tensor, config: Optional[SoftmaxConfig] = None) -> torch.Tensor:
    config = config or SoftmaxConfig()
    output = torch.empty_like(input)
    rows, cols = input.shape
    _softmax_kernel[(rows,)](input, output, cols, input.stride(0), BLOCK=config.block, num_warps=config.num_warps)
    return output


def softmax(x: torch.Tensor) -> torch.Tensor:
    return softmax_forward(x)
