# task: vector_add
# class: 5 says done before its work ends
# twin: honest_vector_add.py
# expect: wrong
# Returns an unwritten tensor at once from every call and hands the work (on copies of the
# inputs) to a thread it started at import, which fills the tensor 20 ms later. A judge that
# read the outputs late, or let threads finish outside its clock, would see right values
# and a call that costs nothing.
import queue
import threading
import time

import torch
import triton
import triton.language as tl

_JOBS: queue.Queue = queue.Queue()


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def _finisher() -> None:
    while True:
        x, y, out = _JOBS.get()
        time.sleep(0.02)
        try:
            _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
        except Exception:
            pass


threading.Thread(target=_finisher, daemon=True).start()


def vector_add(x, y):
    out = torch.empty_like(x)
    _JOBS.put((x.clone(), y.clone(), out))
    return out
