"""Output comparison, made in a trusted checker process that never imported a candidate.

The rule is per element, as torch.testing's: |out - ref| <= atol + rtol * |ref|. No scaling
of atol by the output's magnitude: outputs far below 1 (a softmax over 3000 columns is
~3e-4 per element) must be right to their own precision, not to 1% of the largest value.
Per-dtype defaults are torch.testing's; a task may widen them only with a stated reason
(`Task.tolerance_reason`). NaN or an infinity where the reference is finite never passes
(kind `nan`: the worker's poison of fresh allocations is one of them); shape and dtype
must match exactly; integer outputs match exactly.

Determinism: the same inputs twice must give outputs that agree within
`DETERMINISM_FRACTION` of that tolerance (atomics may reorder a sum; noise added to pass a
loose check may not).
"""

from __future__ import annotations

import random

import torch

DEFAULT_TOLERANCE = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1.3e-6),
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
}
"""torch.testing.assert_close's defaults: dtype name -> (atol, rtol)."""

DETERMINISM_FRACTION = 0.1
"""Two calls on the same inputs may differ by at most this fraction of the tolerance."""


def as_list(value) -> list:
    if isinstance(value, (tuple, list)):
        return [v if isinstance(v, torch.Tensor) else torch.tensor(v) for v in value]
    return [value if isinstance(value, torch.Tensor) else torch.tensor(value)]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance_for(task_tolerance, dtype: torch.dtype) -> tuple[float, float]:
    """Returns (atol, rtol): the task's entry for the dtype, else torch.testing's default."""
    name = dtype_name(dtype)
    if name in task_tolerance:
        return tuple(task_tolerance[name])
    return DEFAULT_TOLERANCE.get(name, (0.0, 0.0))


_DRAW = random.SystemRandom()


def _sampled(expected: torch.Tensor, actual: torch.Tensor, elements: int):
    """Returns (expected, actual, their flat indices) at `elements` flat positions drawn now
    from the operating system's RNG, with replacement."""
    generator = torch.Generator(device=expected.device)
    generator.manual_seed(_DRAW.getrandbits(63))
    where = torch.randint(expected.numel(), (elements,), generator=generator,
                          device=expected.device)
    return expected.reshape(-1)[where], actual.reshape(-1)[where], where


COMPARE_CHUNK = 1 << 24
"""Elements of an output compared at a time. Whole, an output of a billion elements took
tens of GiB of float64 and masks, and the checker ran out of memory beside the pool's other
processes in the middle of a TritonBench-revised reference's check (fast_rope_embedding
asked 8 GiB more with 8 free, RESULTS.md §32)."""


def compare(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float,
            sample: int | None = None) -> dict:
    """Returns {"kind": None | failure kind, "max_abs_err", "rel_err", "detail"}; with
    `sample`, the elements compared are that many drawn at random (shape and dtype whole).
    NaN or an infinity where the reference is finite anywhere fails as `nan` before any
    element out of tolerance fails as `mismatch`; each names its count and first index."""
    if tuple(actual.shape) != tuple(expected.shape):
        return {"kind": "wrong_shape", "detail": f"output shape {tuple(actual.shape)}, "
                f"expected {tuple(expected.shape)}"}
    if actual.dtype != expected.dtype:
        return {"kind": "wrong_dtype", "detail": f"output dtype {dtype_name(actual.dtype)}, "
                f"expected {dtype_name(expected.dtype)}"}
    actual = actual.to(expected.device)
    total, at, of = expected.numel(), None, ""
    if sample is not None and total > sample:
        expected, actual, at = _sampled(expected, actual, sample)
        of = f" drawn at random of {total}"
    expected, actual = expected.reshape(-1), actual.reshape(-1)
    if not (expected.is_floating_point() or expected.is_complex()):
        wrong = sum(int((actual[i:i + COMPARE_CHUNK] != expected[i:i + COMPARE_CHUNK]).sum())
                    for i in range(0, expected.numel(), COMPARE_CHUNK))
        return {"kind": "mismatch" if wrong else None, "max_abs_err": float(wrong),
                "rel_err": float(wrong), "detail": f"{wrong} of {expected.numel()} elements{of} differ"}
    found = _Found()
    for start in range(0, expected.numel(), COMPARE_CHUNK):
        found.add(start, expected[start:start + COMPARE_CHUNK].double(),
                  actual[start:start + COMPARE_CHUNK].double(), atol, rtol)
    result = {"kind": None, "max_abs_err": found.max_abs_err, "rel_err": found.rel_err}
    if found.bad_nan:
        index = found.first_nan
        return {"kind": "nan", "detail": f"{found.bad_nan} of {expected.numel()} outputs{of} are "
                f"NaN or infinite where the reference is finite (first at flat index "
                f"{_flat(index, at)}: {float(actual[index])!r}); fresh allocations hold "
                "NaN or an infinity until written, so an output left unwritten shows as this"}
    if found.over:
        index = found.first_over
        result.update(kind="mismatch", detail=(
            f"{found.over} of {expected.numel()} outputs{of} outside |out - ref| <= atol + "
            f"rtol*|ref| (atol={atol:g}, rtol={rtol:g}); first at flat index {_flat(index, at)}: "
            f"got {float(actual[index])!r}, expected {float(expected[index])!r}"))
    return result


class _Found:
    """What `compare` found over the chunks so far: counts and first flat indices of the
    outputs NaN or infinite where the reference is finite (`bad_nan`) and of those out of
    tolerance (`over`), and the largest absolute and relative errors."""

    def __init__(self):
        self.bad_nan = self.over = 0
        self.first_nan = self.first_over = None
        self.max_abs_err = self.rel_err = 0.0

    def add(self, start: int, exp: torch.Tensor, act: torch.Tensor, atol: float,
            rtol: float) -> None:
        """Adds the chunk of float64 values `exp`, `act` that starts at flat index `start`."""
        exp_nan, act_nan = exp.isnan(), act.isnan()
        bad_nan = (act_nan & ~exp_nan) | (act.isinf() & exp.isfinite())
        self.bad_nan, self.first_nan = self._counted(bad_nan, start, self.bad_nan, self.first_nan)
        finite = exp.isfinite() & act.isfinite()
        inf_wrong = ~finite & ~exp_nan & (act != exp)
        error = torch.where(finite, (act - exp).abs(), torch.zeros_like(exp))
        over = (error > atol + rtol * exp.abs()) | inf_wrong | (exp_nan & ~act_nan)
        self.over, self.first_over = self._counted(over, start, self.over, self.first_over)
        if error.numel():
            relative = torch.where(finite, error / exp.abs().clamp_min(1e-30), torch.zeros_like(exp))
            self.max_abs_err = max(self.max_abs_err, float(error.max()))
            self.rel_err = max(self.rel_err, float(relative.max()))

    @staticmethod
    def _counted(mask: torch.Tensor, start: int, count: int, first: int | None):
        found = int(mask.sum())
        if found and first is None:
            first = start + int(mask.nonzero()[0])
        return count + found, first


def _flat(index: int, at) -> int:
    """Returns a compared element's flat index in the whole output (`at`: the drawn ones')."""
    return index if at is None else int(at[index])


def compare_outputs(expected: list, actual: list, task_tolerance,
                    sample: int | None = None) -> dict:
    """Compares every output (`sample`: that many elements of each, drawn at random);
    returns the first failure or the worst errors."""
    if len(actual) != len(expected):
        return {"kind": "wrong_type", "detail": f"returned {len(actual)} outputs, "
                f"expected {len(expected)}"}
    worst = {"kind": None, "max_abs_err": 0.0, "rel_err": 0.0}
    for position, (exp, act) in enumerate(zip(expected, actual)):
        verdict = compare(exp, act, *tolerance_for(task_tolerance, exp.dtype), sample)
        if verdict["kind"] is not None:
            if len(expected) > 1:
                verdict["detail"] = f"output {position}: {verdict['detail']}"
            return verdict
        worst["max_abs_err"] = max(worst["max_abs_err"], verdict["max_abs_err"])
        worst["rel_err"] = max(worst["rel_err"], verdict["rel_err"])
    return worst


def unwritten_freed(expected: list, actual: list) -> list:
    """Returns `actual` with NaN wherever `expected` is NaN, in each floating output of the
    same shape and dtype: a task whose reference leaves part of its outputs unwritten marks
    those places NaN (`fenced.reference_outputs`), and a candidate's value there is not
    compared. Anything else is left for `compare_outputs` to judge."""
    freed = list(actual)
    for at, (exp, act) in enumerate(zip(expected, actual)):
        if exp.is_floating_point() and act.shape == exp.shape and act.dtype == exp.dtype:
            freed[at] = act.masked_fill(exp.isnan().to(act.device), float("nan"))
    return freed


def wrong_cases(names: list[str], total: int) -> str:
    """Returns which cases of `total` a candidate got wrong, for the head of a verdict's detail."""
    return f"wrong on {len(names)} of {total} cases ({', '.join(map(repr, names))})"


def disagreement(first: list, second: list, expected: list, task_tolerance) -> str | None:
    """Returns why two outputs of the same inputs disagree beyond noise, or None."""
    for position, (a, b, exp) in enumerate(zip(first, second, expected)):
        atol, rtol = tolerance_for(task_tolerance, exp.dtype)
        verdict = compare(a.to(b.device), b, DETERMINISM_FRACTION * atol, DETERMINISM_FRACTION * rtol)
        if verdict["kind"] is not None:
            return (f"output {position}: two calls on the same inputs disagree beyond "
                    f"{DETERMINISM_FRACTION:g} of the tolerance: {verdict.get('detail', '')}")
    return None


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    b = b.to(a.device)
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)
