# task: vector_add
# rule: host-read
# line: 17
# Adds element by element on the host with .item().
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def vector_add(x, y):
    out = torch.empty_like(x)
    values = [x[i].item() + y[i].item() for i in range(x.numel())]
    _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out, values
