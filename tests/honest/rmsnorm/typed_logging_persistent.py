from __future__ import annotations

import logging
import warnings

import torch
import triton
import triton.language as tl

logger = logging.getLogger(__name__)
EPSILON: float = 1e-6
MAX_PROGRAMS: int = 3


@triton.jit
def rmsnorm_persistent_kernel(x_ptr, w_ptr, y_ptr, M: int, N: int, eps: float, BLOCK: tl.constexpr):
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        ss = tl.zeros([BLOCK], tl.float32)
        for c0 in range(0, N, BLOCK):
            c = c0 + tl.arange(0, BLOCK)
            xv = tl.load(x_ptr + row * N + c, mask=c < N, other=0.0).to(tl.float32)
            ss += xv * xv
        r = tl.rsqrt(tl.sum(ss, 0) / N + eps)
        for c0 in range(0, N, BLOCK):
            c = c0 + tl.arange(0, BLOCK)
            xv = tl.load(x_ptr + row * N + c, mask=c < N, other=0.0).to(tl.float32)
            wv = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
            tl.store(y_ptr + row * N + c, (xv * r * wv).to(y_ptr.dtype.element_ty), mask=c < N)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if x.dtype != weight.dtype:
        warnings.warn(f"rmsnorm: x is {x.dtype} but weight is {weight.dtype}")
    x = x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    programs = min(M, MAX_PROGRAMS)
    logger.debug("rmsnorm %s programs=%d", tuple(x.shape), programs)
    rmsnorm_persistent_kernel[(programs,)](x, weight, y, M, N, EPSILON, BLOCK=128, num_warps=2)
    return y
