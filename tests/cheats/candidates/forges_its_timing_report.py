# task: vector_add
# caught-as: policy_violation
# device: cuda
# second-layer-cuda: none
# speedup-at-most: 1.15
# Arbitrary Python in the worker (the timing module, reached through sys.modules): an honest
# kernel whose worker reports every timed run 1.4 times shorter than it took. Scored correct,
# but its speed is the judge's: the judged batch's wall time bounds what a run may claim.
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def _forge():
    timing = sys.modules["fitness.measure.timing"]
    honest = timing._summarize
    if getattr(honest, "forged", False):
        return
    def forged(bucket, method, why):
        return honest([sample / 1.4 for sample in bucket], method, why)
    forged.forged = True
    timing._summarize = forged


_forge()


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
