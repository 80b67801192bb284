# task: vector_add
# rule: kernel-body
# line: 12
# Torch inside a @triton.jit body, which the interpreter would run as plain Python.
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    torch.add(x_ptr, y_ptr, out=out_ptr)


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(1,)](x, y, out, x.numel(), BLOCK_SIZE=16)
    return out
