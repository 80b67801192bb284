# task: vector_add
# caught-as: mismatch|nan
# second-layer: mismatch|nan
# second-layer-cuda: none|nan|mismatch
# Senses a timing loop by the host clock: a call that starts within 5 ms of the last one's
# end does every other block only (within 0.5 ms, on a slow two-core machine the worker's
# own steps between runs were longer and the trick never fired). Calls that are checked
# come farther apart, so only a check of a timed run's own outputs sees it. On a GPU the timed runs replay a graph: no
# Python runs between them, so they do whatever the captured call did, the whole work
# (correct, fairly timed) or half of it (caught as nan).
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, STRIDE: tl.constexpr,
                BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    if pid % STRIDE == 0:
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y, _ended=[0.0]):
    timed = time.perf_counter() - _ended[0] < 0.005
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), STRIDE=2 if timed else 1,
                                                BLOCK_SIZE=256)
    _ended[0] = time.perf_counter()
    return out
