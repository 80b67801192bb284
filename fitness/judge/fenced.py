"""Whether a suite reference's outputs on its performance inputs are set by those inputs
alone: the reference run twice on the same values, each tensor fenced on both sides and
every allocation it makes filled, with one value the first time and another the second,
must give the same outputs.

A reference that reads past its inputs (a block of rows where the tensor has fewer, with no
mask) or leaves part of a fresh output unwritten (a store masked to 96 of 256 columns) gives
outputs that depend on what lies around its tensors. Where the two runs differ only in
places holding each run's fill, in floating outputs, it leaves them unwritten (or copies
them from past its inputs): the input is timed, the judge's runs of the reference marking
those places NaN (`reference_outputs`), a candidate compared only where the reference
writes (`checking.unwritten_freed`). Inputs whose outputs differ otherwise are left out of
the timing, with why (`fitness.judge.performance_inputs`).
"""

from __future__ import annotations

import random

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fitness.judge import checking
from fitness.processes import protocol

FENCE_BYTES = 1 << 20
"""The fill on each side of a fenced tensor: past what a kernel's block reads beyond it."""
FILLS = (0, 3)
"""The two runs' fills: finite (NaN and infinities propagate alike and would compare equal)
and in every dtype's range (bool: False and True)."""
UNWRITTEN = float("nan")
"""The fill that marks what a reference leaves unwritten in the judge's runs of it."""
_DRAW = random.SystemRandom()


def undefined_inputs(calls, device, tolerance) -> tuple[dict[int, str], list[int]]:
    """Returns (for each of `calls`' inputs, `calls.inputs`, made by `calls.make_inputs`,
    `calls(*values)` the reference, whose outputs differ between the two fenced runs other
    than where the reference leaves them unwritten, the first difference; the inputs whose
    outputs differ only there)."""
    found, unwritten = {}, []
    for at in range(calls.inputs):
        values = calls.make_inputs({"input": at}, _DRAW.getrandbits(62), device)
        first, second = (_fenced_run(calls, values, fill) for fill in FILLS)
        verdict = checking.compare_outputs(first, second, tolerance)
        if verdict["kind"] is None:
            continue
        if _only_unwritten(first, second):
            unwritten.append(at)
        else:
            found[at] = f"{verdict['kind']}: {verdict.get('detail', '')}"
    return found, unwritten


def _only_unwritten(first: list, second: list) -> bool:
    """Whether two fenced runs' outputs differ only in floating outputs, where each holds
    its run's fill."""
    for a, b in zip(first, second):
        differ = a != b
        if not bool(differ.any()):
            continue
        if a.shape != b.shape or not a.is_floating_point():
            return False
        if not bool(((a == FILLS[0]) & (b == FILLS[1]))[differ].all()):
            return False
    return len(first) == len(second)


def reference_outputs(task, inputs: list) -> list:
    """Returns `task`'s reference outputs on `inputs`; where the reference leaves part of
    them unwritten (`Task.unwritten_free`), those places NaN: every fresh allocation and
    every input's fence filled with NaN (0 where integer)."""
    if task.unwritten_free:
        return _fenced_run(task.reference, inputs, UNWRITTEN)
    return checking.as_list(task.reference(*inputs))


def _fill_for(dtype: torch.dtype, fill):
    """Returns `fill` as `dtype` holds it: an integer or boolean tensor holds 0 for NaN."""
    return fill if dtype.is_floating_point or dtype.is_complex or fill == fill else 0


def _fenced_run(reference, values: list, fill) -> list:
    with _Filled(fill):
        return checking.as_list(reference(*[_fenced(value, fill) for value in values]))


class _Filled(TorchDispatchMode):
    """Fills every fresh allocation (`protocol.ALLOCATORS`) with `fill`."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # as `instrument.OpRecorder`: no dynamo import
        return False

    def __init__(self, fill):
        super().__init__()
        self.fill = fill

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__ in protocol.ALLOCATORS and isinstance(out, torch.Tensor):
            out.fill_(_fill_for(out.dtype, self.fill))
        return out


def _fenced(value, fill):
    """Returns a copy of tensor `value` (its strides kept) with `FENCE_BYTES` of `fill` on
    both sides; anything else, and a tensor whose elements overlap, as it is."""
    if not isinstance(value, torch.Tensor) or value.numel() == 0:
        return value
    pad = max(1, FENCE_BYTES // value.element_size())
    storage = torch.full((protocol.extent(value.shape, value.stride(), 0) + 2 * pad,),
                         _fill_for(value.dtype, fill),
                         dtype=value.dtype, device=value.device)
    fenced = storage.as_strided(value.shape, value.stride(), pad)
    try:
        fenced.copy_(value)
    except RuntimeError:  # an expanded tensor: one element written through several places
        return value
    return fenced
