"""Whether a suite reference's outputs on its performance inputs are set by those inputs
alone: the reference run twice on the same values, each tensor fenced on both sides and
every allocation it makes filled, with one value the first time and another the second,
must give the same outputs.

A reference that reads past its inputs (a block of rows where the tensor has fewer, with no
mask) or leaves part of a fresh output unwritten (a store masked to 96 of 256 columns) gives
outputs that depend on what lies around its tensors: in the worker's lent buffer the next
set or the poison, in the checker other memory. Compared with itself across the two, it
fails, and so would every candidate. Such inputs are left out of the timing, with why
(`fitness.judge.performance_inputs`).
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
_DRAW = random.SystemRandom()


def undefined_inputs(calls, device, tolerance) -> dict[int, str]:
    """Returns, for each of `calls`' inputs (`calls.inputs`, made by `calls.make_inputs`;
    `calls(*values)` the reference) whose outputs differ between the two fenced runs, the
    first difference."""
    found = {}
    for at in range(calls.inputs):
        values = calls.make_inputs({"input": at}, _DRAW.getrandbits(62), device)
        first, second = (_fenced_run(calls, values, fill) for fill in FILLS)
        verdict = checking.compare_outputs(first, second, tolerance)
        if verdict["kind"] is not None:
            found[at] = f"{verdict['kind']}: {verdict.get('detail', '')}"
    return found


def _fenced_run(calls, values: list, fill) -> list:
    with _Filled(fill):
        return checking.as_list(calls(*[_fenced(value, fill) for value in values]))


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
            out.fill_(self.fill)
        return out


def _fenced(value, fill):
    """Returns a copy of tensor `value` (its strides kept) with `FENCE_BYTES` of `fill` on
    both sides; anything else, and a tensor whose elements overlap, as it is."""
    if not isinstance(value, torch.Tensor) or value.numel() == 0:
        return value
    pad = max(1, FENCE_BYTES // value.element_size())
    storage = torch.full((protocol.extent(value.shape, value.stride(), 0) + 2 * pad,), fill,
                         dtype=value.dtype, device=value.device)
    fenced = storage.as_strided(value.shape, value.stride(), pad)
    try:
        fenced.copy_(value)
    except RuntimeError:  # an expanded tensor: one element written through several places
        return value
    return fenced
