# task: vector_add
# rule: grid-callable
# line: 26
# A grid closure reached through a local table, so no launch names it.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def vector_add(x, y):
    o = torch.empty_like(x)
    pair = (x, y)

    def work(meta):
        out = o
        first, second = pair
        out.view(-1).narrow(0, 0, out.numel()).zero_()
        return (1,)

    grids = {"main": work}
    _noop_kernel[grids["main"]](o, o.numel(), BLOCK_SIZE=16)
    return o
