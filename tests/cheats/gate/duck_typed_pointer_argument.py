# task: vector_add
# rule: launch-hook
# line: 31
# An object of a class of the module handed to a launch: Triton calls its data_ptr() inside the
# launch.
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


class _Pointer:
    def __init__(self, out):
        self.out = out
        self.dtype = out.dtype

    def data_ptr(self):
        return _work(self.out)


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, _Pointer(out), x.numel(), BLOCK_SIZE=1024)
    return out


def _work(out):
    return out.data_ptr()
