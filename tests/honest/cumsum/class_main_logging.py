import logging

import torch
import triton
import triton.language as tl

logger = logging.getLogger(__name__)


@triton.jit
def prefix_sum_kernel(inp, out, n_cols, row_stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = pid * row_stride
    total = tl.zeros((), dtype=tl.float32)
    for k in range(tl.cdiv(n_cols, BLOCK)):
        offs = k * BLOCK + tl.arange(0, BLOCK)
        ok = offs < n_cols
        vals = tl.load(inp + base + offs, mask=ok, other=0.0).to(tl.float32)
        res = tl.cumsum(vals, 0) + total
        tl.store(out + base + offs, res.to(out.dtype.element_ty), mask=ok)
        total = total + tl.sum(vals, 0)


class CumSum:
    block = 512

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.empty_like(x)
        logger.debug("cumsum rows=%d cols=%d", rows, cols)
        prefix_sum_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=self.block, num_warps=8)
        return y


def cumsum(x):
    return CumSum().forward(x)


if __name__ == "__main__":
    a = torch.randn(7, 600, device="cuda")
    print("ok:", torch.allclose(cumsum(a), torch.cumsum(a, -1), atol=1e-3))
