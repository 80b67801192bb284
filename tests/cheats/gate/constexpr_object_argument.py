# task: vector_add
# rule: launch-hook
# line: 28
# An object of a class of the module passed as a tl.constexpr: under the interpreter its methods run
# as Python inside the launch.
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


class _Plan:
    def __init__(self, x, y, out):
        self.x, self.y, self.out = x, y, out


def vector_add(x, y):
    out = torch.empty_like(x)
    plan = _Plan(x, y, out)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=plan)
    return out
