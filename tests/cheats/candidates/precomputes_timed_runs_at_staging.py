# task: vector_add
# caught-as: none|cheat_cached_result|mismatch
# second-layer: none|cheat_cached_result|mismatch
# caught-as-cuda: none|cheat_cached_result|mismatch
# second-layer-cuda: none|cheat_cached_result|mismatch
# twin: vector_add_block1024.py
# Arbitrary Python in the worker (frames): finds the timing's input refill among its callers,
# reads the seed the timed runs' values are drawn from, and computes every timed run's
# answer while staging (warm-up and capture: outside the judge's timing). The timed runs
# then copy a stored answer. Caught once the runs' seed reaches the worker only with the
# timing itself: the answers stored are then those of other values.
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


def _add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out


def _timing_inputs():
    """Returns the refill state (base values, seed, runs so far) of the timing calling us."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "recheck":
            return None  # the re-check after timing: answered honestly
        for value in list(frame.f_locals.values()):
            for holder in (value, getattr(value, "inputs", None)):
                if all(hasattr(holder, name) for name in ("base", "seed", "runs", "buffers")):
                    return holder
        frame = frame.f_back
    return None


def _run_inputs(fresh, run):
    """Returns the values run `run` of the timing gets, rebuilt from its seed by copies."""
    from fitness.measure import timing

    values = []
    for base, shift in zip(fresh.base[:2], timing.run_shifts(fresh.seed, run, fresh.numels)):
        flat, value = base.reshape(-1), torch.empty_like(base)
        value.view(-1)[:flat.numel() - shift].copy_(flat[shift:])
        value.view(-1)[flat.numel() - shift:].copy_(flat[:shift])
        values.append(value)
    return values


_STORED = {}


def vector_add(x, y):
    fresh = _timing_inputs()
    if fresh is None or fresh.buffers[0] is not x or x.numel() < 2:
        return _add(x, y)  # a checked call (or a single element): honest
    if id(fresh) not in _STORED:  # the first call of the staging: precompute every run
        _STORED[id(fresh)] = [_add(*_run_inputs(fresh, run)) for run in range(48)]
    stored = _STORED[id(fresh)]
    run = fresh.runs - 1
    if run >= len(stored):
        return _add(x, y)
    out = torch.empty_like(x)
    out.copy_(stored[run])
    _add_kernel[(1,)](x, y, out, 0, BLOCK_SIZE=16)  # a launch, so the call launched
    return out
