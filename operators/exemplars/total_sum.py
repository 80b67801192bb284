"""total_sum(x) -> the sum of all elements as a 0-d tensor: a deterministic two-stage reduction.

Stage 1 writes one partial sum per program; stage 2 (one program) adds the partials. No
atomics, so the result is bitwise the same on every run.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _partial_sum_kernel(x_ptr, partial_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def _final_sum_kernel(partial_ptr, out_ptr, n_partials, BLOCK_SIZE: tl.constexpr):
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(partial_ptr + offsets, mask=offsets < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def total_sum(x: torch.Tensor) -> torch.Tensor:
    assert x.is_contiguous(), "input must be contiguous"
    n_elements = x.numel()
    n_partials = max(1, triton.cdiv(n_elements, 2048))
    partials = torch.empty((n_partials,), dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=x.dtype, device=x.device)
    _partial_sum_kernel[(n_partials,)](x, partials, n_elements, BLOCK_SIZE=2048, num_warps=8)
    _final_sum_kernel[(1,)](partials, out, n_partials, BLOCK_SIZE=1024, num_warps=4)
    return out
