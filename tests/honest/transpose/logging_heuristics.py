import logging

import torch
import triton
import triton.language as tl

logger = logging.getLogger(__name__)


@triton.heuristics({
    "EVEN_M": lambda args: args["M"] % args["BLOCK_M"] == 0,
    "EVEN_N": lambda args: args["N"] % args["BLOCK_N"] == 0,
})
@triton.jit
def transpose_2d_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        EVEN_M: tl.constexpr, EVEN_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    src = X + offs_m[:, None] * N + offs_n[None, :]
    dst = Y + offs_n[None, :] * M + offs_m[:, None]
    if EVEN_M and EVEN_N:
        tl.store(dst, tl.load(src))
    else:
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tl.store(dst, tl.load(src, mask=mask, other=0.0), mask=mask)


def transpose(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty(N, M, dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N = 16, 16
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    logger.debug("transpose %dx%d grid=%s", M, N, grid)
    transpose_2d_kernel[grid](x, y, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return y
