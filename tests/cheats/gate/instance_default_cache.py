# task: vector_add
# rule: global-state
# line: 24
# An instance created as a default argument holds a workspace that outlives every call.
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


class _Workspace:
    def __init__(self):
        self.buffer = torch.empty(1 << 20)


def vector_add(x, y, _ws=_Workspace()):
    out = _ws.buffer.narrow(0, 0, x.numel()).view(x.shape)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
