# task: vector_add
# rule: mutation
# line: 20
# A launcher that appends a pre-run hook to the kernel it was handed: mutation of a library object.
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def _launch(kernel, x, y, out):
    kernel.pre_run_hooks.append(_hook)
    kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)


def vector_add(x, y):
    out = torch.empty_like(x)
    _launch(_add_kernel, x, y, out)
    return out


def _hook(*args, **kwargs):
    return None
