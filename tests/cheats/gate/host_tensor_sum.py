# task: row_sum
# rule: host-torch
# line: 16
# A Tensor method that computes (x.sum) on the host and a dummy launch.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def row_sum(x):
    out = x.sum(dim=1)
    _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out
