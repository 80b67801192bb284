# task: vector_add
# caught-as: nan
# Allocates the output and launches a kernel that never stores: the poisoned buffer shows.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def vector_add(x, y):
    out = torch.empty_like(x)
    _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out
