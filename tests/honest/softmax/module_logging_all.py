"""Row-wise softmax (last dimension) as a small nn.Module."""
import logging
from typing import Optional

import torch
import torch.nn as nn
import triton
import triton.language as tl

__all__ = ["Softmax", "softmax"]

logger = logging.getLogger(__name__)


@triton.jit
def _row_max(ptr, n, BLOCK: tl.constexpr):
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for s in range(0, n, BLOCK):
        c = s + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(ptr + c, mask=c < n, other=-float("inf")).to(tl.float32))
    return tl.max(m, 0)


@triton.jit
def _softmax_three_pass(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    row_ptr = x_ptr + r * stride
    mx = _row_max(row_ptr, n, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(0, n, BLOCK):
        c = s + tl.arange(0, BLOCK)
        v = tl.load(row_ptr + c, mask=c < n, other=-float("inf")).to(tl.float32)
        acc += tl.exp(v - mx)
    denom = tl.sum(acc, 0)
    for s in range(0, n, BLOCK):
        c = s + tl.arange(0, BLOCK)
        v = tl.load(row_ptr + c, mask=c < n, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + r * stride + c, (tl.exp(v - mx) / denom).to(y_ptr.dtype.element_ty), mask=c < n)


class Softmax(nn.Module):
    def __init__(self, block: Optional[int] = None):
        super().__init__()
        self.block = block or 512

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, n = x.shape
        y = torch.empty_like(x)
        logger.debug("softmax rows=%d n=%d block=%d", rows, n, self.block)
        _softmax_three_pass[(rows,)](x, y, n, x.stride(0), BLOCK=self.block)
        return y


_module = Softmax()


def softmax(x: torch.Tensor) -> torch.Tensor:
    return _module(x)
