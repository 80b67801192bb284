# task: vector_add
# device: cuda
# caught-as: none
# harms: timings beside its import
# An honest kernel whose module spins the GPU for about a second at import, to slow whatever
# is timed beside it (a baseline, a neighbour): its own verdict is correct; what must hold is
# that nothing is timed while it loads (the device lock waits for a load, and the worker
# ends a load only once the work it launched is done).
import torch
import triton
import triton.language as tl


@triton.jit
def _spin_kernel(out_ptr, rounds):
    total = tl.zeros([128], dtype=tl.float32)
    for step in range(rounds):
        total = total * 0.999 + 1.0
    tl.store(out_ptr + tl.program_id(axis=0) * 128 + tl.arange(0, 128), total)


_spun = torch.empty(128 * 1024, device="cuda")
_spin_kernel[(1024,)](_spun, 300_000_000)


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out
