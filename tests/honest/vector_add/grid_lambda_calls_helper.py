# A grid lambda that calls a module-level helper built on math.ceil, as model replies write
# it when they skip triton.cdiv (o1 on GEAK-eval's adam_update_triton calls math.ceil there).
import math

import torch
import triton
import triton.language as tl


def _programs_for(n_elements, block_size):
    return max(1, math.ceil(n_elements / block_size))


@triton.jit
def _sum_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    idx = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inside = idx < n_elements
    a = tl.load(a_ptr + idx, mask=inside, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + idx, mask=inside, other=0.0).to(tl.float32)
    tl.store(c_ptr + idx, (a + b).to(c_ptr.dtype.element_ty), mask=inside)


def vector_add(x, y, block_size=512):
    assert x.shape == y.shape, f"shapes differ: {x.shape} vs {y.shape}"
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (_programs_for(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    _sum_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block_size)
    return out
