# task: vector_add
# rule: launch-hook
# line: 20
# The kernel bound as a default argument, so the call can reach the kernel object and set its pre-
# run hooks (Python Triton runs inside the launch).
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


def vector_add(x, y, _k=_add_kernel):
    out = torch.empty_like(x)
    _k.pre_run_hooks[:] = [_hook]
    _k[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out


def _hook(*args, **kwargs):
    return None
