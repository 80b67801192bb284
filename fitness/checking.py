"""Output comparison, run in a checker process that never imported a candidate.

The candidate's worker saved its outputs (`torch.save`); here the inputs are regenerated
from the seed, the reference is run on them, and the saved tensors are read with
`weights_only=True` (nothing from the candidate's side runs here).
Tolerance is per dtype, with `atol` scaled by the reference output's magnitude; NaN where
the reference is finite never passes; shape and dtype must match exactly.
"""

from __future__ import annotations

import torch

_FALLBACK_TOLERANCE = (1e-4, 1e-4)


def _as_list(value) -> list:
    if isinstance(value, (tuple, list)):
        return [v if isinstance(v, torch.Tensor) else torch.tensor(v) for v in value]
    return [value if isinstance(value, torch.Tensor) else torch.tensor(value)]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def compare(expected: torch.Tensor, actual: torch.Tensor, tolerance) -> dict:
    """Returns {"kind": None | failure kind, "max_abs_err", "rel_err", "detail"}."""
    if tuple(actual.shape) != tuple(expected.shape):
        return {"kind": "wrong_shape", "detail": f"output shape {tuple(actual.shape)}, "
                f"expected {tuple(expected.shape)}"}
    if actual.dtype != expected.dtype:
        return {"kind": "wrong_dtype", "detail": f"output dtype {_dtype_name(actual.dtype)}, "
                f"expected {_dtype_name(expected.dtype)}"}
    actual = actual.to(expected.device)
    if not (expected.is_floating_point() or expected.is_complex()):
        wrong = int((actual != expected).sum())
        return {"kind": "mismatch" if wrong else None, "max_abs_err": float(wrong),
                "rel_err": float(wrong), "detail": f"{wrong} of {expected.numel()} elements differ"}
    exp, act = expected.double(), actual.double()
    exp_nan, act_nan = exp.isnan(), act.isnan()
    bad_nan = act_nan & ~exp_nan
    if bool(bad_nan.any()):
        index = int(bad_nan.flatten().nonzero()[0])
        return {"kind": "nan", "detail": f"{int(bad_nan.sum())} of {exp.numel()} outputs are NaN "
                f"where the reference is not (first at flat index {index})"}
    finite = exp.isfinite() & act.isfinite()
    inf_wrong = ~finite & ~exp_nan & (act != exp)
    atol, rtol = tolerance.get(_dtype_name(expected.dtype), _FALLBACK_TOLERANCE)
    magnitude = float(exp[finite].abs().max()) if bool(finite.any()) else 0.0
    error = torch.where(finite, (act - exp).abs(), torch.zeros_like(exp))
    allowed = atol * max(1.0, magnitude) + rtol * exp.abs()
    over = (error > allowed) | inf_wrong | (exp_nan & ~act_nan)
    max_abs_err = float(error.max()) if error.numel() else 0.0
    result = {"kind": None, "max_abs_err": max_abs_err,
              "rel_err": max_abs_err / max(magnitude, 1e-12)}
    if bool(over.any()):
        index = int(over.flatten().nonzero()[0])
        result.update(kind="mismatch", detail=(
            f"{int(over.sum())} of {exp.numel()} outputs outside tolerance (atol={atol} x "
            f"max(1, |ref|max={magnitude:.3g}), rtol={rtol}); first at flat index {index}: "
            f"got {float(act.flatten()[index])!r}, expected {float(exp.flatten()[index])!r}"))
    return result


def _compare_outputs(expected_outputs: list, saved: dict, tolerance) -> dict:
    actual_outputs = saved["outputs"]
    if len(actual_outputs) != len(expected_outputs):
        return {"kind": "wrong_type", "detail": f"returned {len(actual_outputs)} outputs, "
                f"expected {len(expected_outputs)}"}
    worst = {"kind": None, "max_abs_err": 0.0, "rel_err": 0.0}
    for position, (exp, act) in enumerate(zip(expected_outputs, actual_outputs)):
        verdict = compare(exp, act, tolerance)
        if verdict["kind"] is not None:
            if len(expected_outputs) > 1:
                verdict["detail"] = f"output {position}: {verdict['detail']}"
            return verdict
        worst["max_abs_err"] = max(worst["max_abs_err"], verdict["max_abs_err"])
        worst["rel_err"] = max(worst["rel_err"], verdict["rel_err"])
    return worst


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


def check_case(task, params, calls, device: str) -> dict:
    """Checks the saved outputs of one case's calls against the reference.

    `calls` is a list of (seed, path). Returns {"kind", "max_abs_err", "rel_err", "detail"};
    a later call whose wrong output equals an earlier call's output bit for bit is
    `cheat_cached_result` (the candidate replayed an answer for different inputs).
    """
    previous = []
    worst = {"kind": None, "max_abs_err": 0.0, "rel_err": 0.0, "detail": ""}
    for seed, path in calls:
        expected = _as_list(task.reference(*task.make_inputs(params, seed, device)))
        saved = torch.load(path, weights_only=True, map_location="cpu")
        verdict = _compare_outputs(expected, saved, task.tolerance)
        if verdict["kind"] is not None:
            replayed = any(len(p) == len(saved["outputs"]) and all(
                bitwise_equal(a, b) for a, b in zip(p, saved["outputs"])) for p in previous)
            if replayed and verdict["kind"] == "mismatch":
                verdict = {**verdict, "kind": "cheat_cached_result",
                           "detail": "a second call on new inputs returned the first call's "
                                     "output unchanged; " + verdict.get("detail", "")}
            return {**worst, **verdict}
        previous.append(saved["outputs"])
        worst["max_abs_err"] = max(worst["max_abs_err"], verdict["max_abs_err"])
        worst["rel_err"] = max(worst["rel_err"], verdict["rel_err"])
    return worst
