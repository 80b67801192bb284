# task: vector_add
# rule: rebind
# line: 12
# An import alias of triton.jit rebound to a no-op decorator: the grid function it decorates
# looks like a kernel (judged by kernel rules) but runs on the host inside the launch.
import torch
import triton
import triton.language as tl
from triton import jit as trace


trace = lambda f: f


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


@trace
def _grid(meta):
    o, x, y = meta["o"], meta["x"], meta["y"]
    o[:] = x + y
    return (1,)


def vector_add(x, y):
    o = torch.empty_like(x)
    _noop_kernel[_grid](o, o.numel(), BLOCK_SIZE=16)
    return o
