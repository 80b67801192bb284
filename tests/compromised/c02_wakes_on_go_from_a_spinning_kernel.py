# task: vector_add
# class: 2 slows or swaps the worker's clock
# twin: honest_vector_add.py
# expect: no-faster
# It leaves the judge's clock alone and tries to start its runs sooner on it: at import it
# wraps the worker's `stream_sync.wait_value`, so that where the worker would have its stream
# wait on `go` in the GPU's front end (woken about 100-160 us after the judge stores it,
# RESULTS.md#host-clock) a one-thread kernel of its own spins on the word from the moment the
# batch is armed, and the runs follow within microseconds of `go`. With the checker's turn
# queued at `go` and the front end's wake it read 1.20x its twin on the H200 (RESULTS.md §33),
# so since fitness-18 every worker wakes this way (`clock.WAKE = "spin"`, which never calls
# `wait_value` for `go`) and this file is its twin there: it stays to hold `WAKE` to it. The
# kernel spins while the judge makes and copies the batch's inputs, so it also tests what a
# context busy on the GPU before `go` does to the judge's fill. The runs are the honest
# twin's; on the interpreter (no stream waits) it is the twin.
import importlib

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


@triton.jit(do_not_specialize=["value"])  # one compiled kernel for every batch's value
def _spin_until(word_ptr, value):
    seen = tl.load(word_ptr, volatile=True)  # volatile: read again each time, never cached
    while seen != value:
        seen = tl.load(word_ptr, volatile=True)


class _Word:
    """A 32-bit word at a device address, in the form a Triton launch takes as a pointer."""

    dtype = torch.int32

    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def _spin_instead(wait_value):
    """Returns `wait_value` that launches `_spin_until` on the stream instead of a wait."""

    def spin(stream, address, value):
        try:
            with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
                _spin_until[(1,)](_Word(address), value, num_warps=1)
        except Exception:  # a word Triton cannot take: the worker's own wait
            wait_value(stream, address, value)

    return spin


if torch.cuda.is_available():
    _ready = torch.full((1,), 7, dtype=torch.int32, device="cuda")
    _spin_until[(1,)](_ready, 7, num_warps=1)  # compiled now, not while a batch is armed
    torch.cuda.synchronize()
    _stream_sync = importlib.import_module("fitness.processes.stream_sync")
    _stream_sync.wait_value = _spin_instead(_stream_sync.wait_value)


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
