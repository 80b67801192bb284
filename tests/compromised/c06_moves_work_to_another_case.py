# task: vector_add
# class: 6 moves work from one case's timing into another's
# twin: honest_vector_add.py
# expect: no-faster
# The largest input shape it has seen is "the big case". After the first two calls of that
# shape (the checks, it guesses) it only queues the work (on copies of the inputs) and
# returns an unwritten tensor after an empty launch; the queue is worked off at the start
# of the next call of another shape (inside another case's timing) or by a thread started
# at import once no call has come for 50 ms. The big case looks free; another case pays
# once, in one run.
import threading
import time

import torch
import triton
import triton.language as tl

_LOCK = threading.RLock()  # launches from two threads must not interleave
_state = {"big": 0, "calls": {}, "pending": [], "last": time.perf_counter()}


@triton.jit
def _touch(out_ptr):
    pass


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def _add(x, y, out):
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)


def _drain() -> None:
    with _LOCK:
        pending, _state["pending"] = _state["pending"], []
        for x, y, out in pending:
            _add(x, y, out)


def _idle_drainer() -> None:
    while True:
        time.sleep(0.01)
        if _state["pending"] and time.perf_counter() - _state["last"] > 0.05:
            try:
                _drain()
            except Exception:
                pass


threading.Thread(target=_idle_drainer, daemon=True).start()


def vector_add(x, y):
    with _LOCK:
        n = x.numel()
        _state["big"] = max(_state["big"], n)
        seen = _state["calls"][n] = _state["calls"].get(n, 0) + 1
        out = torch.empty_like(x)
        if n == _state["big"] and seen > 2:
            _state["pending"].append((x.clone(), y.clone(), out))
            _touch[(1,)](out)  # a launch per call, as the honest kernel makes
        else:
            _drain()
            _add(x, y, out)
        _state["last"] = time.perf_counter()
        return out
