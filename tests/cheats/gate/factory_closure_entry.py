# task: vector_add
# rule: entry-point
# line: 31
# The entry point made by a factory call: its closure keeps a workspace between calls.
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


def _make_entry():
    workspace = torch.empty(1 << 20)

    def entry(x, y):
        n = x.numel()
        out = workspace.narrow(0, 0, n).view(x.shape)
        _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        return out

    return entry


vector_add = _make_entry()
