# task: vector_add
# caught-as: nan|mismatch
# second-layer: nan|mismatch
# second-layer-cuda: nan|none
# Arbitrary Python in the worker (frames): timed runs do every other block only; the call
# after them (the re-check, in the same process) finds the outputs the worker keeps of its
# timed runs and writes the right answers into them, then answers itself honestly. Caught
# once the judge reads a chosen run's outputs in, the worker stopped, before the candidate
# runs again (the judged batch).
# On a GPU the timed runs replay the captured call, which ran outside any timing: the whole
# work (correct, fairly timed).
import sys

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


def _add(x, y, stride=1):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), STRIDE=stride,
                                                BLOCK_SIZE=256)
    return out


def _callers():
    """Returns (names of the calling functions, the timed case among their locals)."""
    names, case, frame = set(), None, sys._getframe(2)
    while frame is not None:
        names.add(frame.f_code.co_name)
        for value in list(frame.f_locals.values()):
            if case is None and hasattr(value, "kept") and hasattr(value, "inputs"):
                case = value
        frame = frame.f_back
    return names, case


def _run_inputs(fresh, run):
    """Returns the values run `run` of the timing got, rebuilt from its seed by copies."""
    from fitness.measure import timing

    values = []
    for base, shift in zip(fresh.base[:2], timing.run_shifts(fresh.seed, run, fresh.numels)):
        flat, value = base.reshape(-1), torch.empty_like(base)
        value.view(-1)[:flat.numel() - shift].copy_(flat[shift:])
        value.view(-1)[flat.numel() - shift:].copy_(flat[:shift])
        values.append(value)
    return values


def vector_add(x, y):
    names, case = _callers()
    if case is not None and "recheck" in names:
        kept = case.kept
        runs = getattr(kept, "kept", None) or {getattr(kept, "run", None): getattr(kept, "output", None)}
        for run, outputs in runs.items():
            if outputs:
                outputs[0].copy_(_add(*_run_inputs(case.inputs, run)))
        return _add(x, y)
    if {"run_batch", "_time_wall", "_time_events", "run_judged_batch"} & names:
        return _add(x, y, stride=2)
    return _add(x, y)
