# task: vector_add
# class: 5 says done before its work ends
# twin: c12_does_every_run_in_one_launch.py
# expect: no-faster
# `c05_writes_done_from_its_host` with its runs done by one kernel and `done` said by the GPU
# (its twin, c12, is the same file with an honest `done`, so what the two differ by is the
# clock's, RESULTS.md §32):
# in a timed batch on a GPU the first run launches a single kernel over every run's lent
# inputs and regions (found among the worker's objects) and the other runs launch a kernel
# that does nothing (so the op audit sees a launch in every run: it is a lint, and this
# tests the clock). At import it wraps the worker's `stream_sync.wait_value` and
# `spin_until` (the worker's wait on `go`, whichever `clock.WAKE` it is): whenever the worker
# arms a batch, a stream of its own waits for the same `go` and at once writes it into the
# next word, `done`, while the one kernel still does the runs. A context yields the GPU
# at a kernel's end; one kernel holds it to its end, a time slice at most (about 2.4 ms on an
# H200), so the judge's snapshot, queued after `done`, finds every output written though
# `done` came microseconds after `go`. Outside a timed batch (and on the interpreter, which
# has no lent buffer and no stream waits) it is the honest twin.
import gc
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


@triton.jit
def _every_run_kernel(table_ptr, n_elements, BLOCK_SIZE: tl.constexpr, DTYPE: tl.constexpr):
    run = tl.program_id(axis=1)  # the table holds each run's x, y and out addresses
    x_ptr = tl.load(table_ptr + 3 * run).to(tl.pointer_type(DTYPE))
    y_ptr = tl.load(table_ptr + 3 * run + 1).to(tl.pointer_type(DTYPE))
    out_ptr = tl.load(table_ptr + 3 * run + 2).to(tl.pointer_type(DTYPE))
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(DTYPE), mask=mask)


_DTYPES = {torch.float32: tl.float32}
"""The one kernel's dtypes. Only where the twin's kernel runs at the baseline's speed (fp32 of a
length divisible by 16): on an H200 it was 2.4x slower than the one kernel on bf16 of an odd
length, for want of vector loads, and that is not what this file tests."""
_TABLES: dict = {}  # the batch's addresses -> their table on the device, made before any capture


def _batch_of(x):
    """Returns (the object holding the lent `sets` and `regions`, x's run), or (None, None)."""
    for held in gc.get_objects():
        try:
            fields = vars(held)
        except TypeError:  # no __dict__
            continue
        sets, regions = fields.get("sets"), fields.get("regions")
        if not (isinstance(sets, list) and isinstance(regions, list) and sets and len(sets) == len(regions)):
            continue
        for run, values in enumerate(sets):
            if isinstance(values, list) and values and getattr(values[0], "data_ptr", None) \
                    and torch.is_tensor(values[0]) and values[0].data_ptr() == x.data_ptr():
                return held, run
    return None, None


def _table(batch):
    """Keyed by the addresses, not the object: a case's object may take a dead one's id, and
    a stale table sent the kernel to memory released with it (an illegal access on the H200)."""
    # the first run's output is the first allocation of its region
    addresses = tuple((values[0].data_ptr(), values[1].data_ptr(), region.data_ptr())
                      for values, region in zip(batch.sets, batch.regions))
    if addresses not in _TABLES:
        _TABLES[addresses] = torch.tensor(addresses, dtype=torch.int64, device="cuda").flatten()
    return _TABLES[addresses]


def _say_done_early(wait, wait_value, write_value):
    """Returns `wait` (the worker's wait on `go`, in the front end or spinning) that also has a
    stream of this process wait for the same word and value and then write the value into the
    next word (`done` follows `go`)."""
    streams = []

    def wait_and_say_done(stream, address, value):
        wait(stream, address, value)
        if not streams:
            streams.append(torch.cuda.Stream())
        wait_value(streams[0].cuda_stream, address, value)
        write_value(streams[0].cuda_stream, address + 4, value)

    return wait_and_say_done


_stream_sync = importlib.import_module("fitness.processes.stream_sync")
_stream_sync.spin_until = _say_done_early(_stream_sync.spin_until, _stream_sync.wait_value,
                                          _stream_sync.write_value)
_stream_sync.wait_value = _say_done_early(_stream_sync.wait_value, _stream_sync.wait_value,
                                          _stream_sync.write_value)


def vector_add(x, y):
    out = torch.empty_like(x)
    batch, run = (_batch_of(x) if x.is_cuda and x.dtype in _DTYPES and x.numel() % 16 == 0
                  else (None, None))
    if batch is None:
        _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    elif run == 0:
        grid = (triton.cdiv(x.numel(), 1024), len(batch.sets))
        _every_run_kernel[grid](_table(batch), x.numel(), BLOCK_SIZE=1024, DTYPE=_DTYPES[x.dtype])
    else:  # every element masked off: a launch that does nothing
        _add_kernel[(1,)](x, y, out, 0, BLOCK_SIZE=1024)
    return out
