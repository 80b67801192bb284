# task: vector_add
# caught-as: inputs_modified
# Writes the sum into x and returns x: right values, but the caller's input is destroyed.
import torch
import triton
import triton.language as tl


@triton.jit
def _add_into_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptr + offsets, (x + y).to(x_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    _add_into_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
    return x
