"""Compares a candidate's harness outputs with the reference's: a process no candidate ran in.

Started by `fitness.harness` as `python -I harness_check.py SPEC.json`; imports nothing from
the engine. Both output files are read with `torch.load(weights_only=True)`, so a forged
file cannot run code here. SPEC keys: expected, actual (paths), tolerance (dtype name ->
[atol, rtol]), report (path of the JSON verdict).

Rules: the same keys and lengths; tensors of the same shape and dtype; NaN and inf only
where the reference has them; |actual - expected| <= atol + rtol * |expected| elementwise in
float64; integers, booleans and strings exactly. Each top-level entry (a test, a trial) is
one case with its max abs error.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys


class Mismatch(Exception):
    """An output differs; `kind` is the failure kind, the message says where and how."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _tolerance(tolerance: dict, dtype_name: str) -> tuple[float, float]:
    atol, rtol = tolerance.get(dtype_name) or tolerance.get("float32") or (1e-4, 1e-4)
    return float(atol), float(rtol)


def _compare_tensors(expected, actual, where: str, tolerance: dict) -> float:
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        raise Mismatch("wrong_shape", f"{where}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if actual.dtype != expected.dtype:
        raise Mismatch("wrong_dtype", f"{where}: dtype {actual.dtype}, expected {expected.dtype}")
    if actual.numel() == 0:
        return 0.0
    if not (expected.is_floating_point() or expected.is_complex()):
        if not torch.equal(actual, expected):
            wrong = int((actual != expected).sum())
            raise Mismatch("mismatch", f"{where}: {wrong} of {expected.numel()} values differ (exact dtype)")
        return 0.0
    e, a = expected.to(torch.complex128 if expected.is_complex() else torch.float64), \
        actual.to(torch.complex128 if actual.is_complex() else torch.float64)
    e_nan, a_nan = torch.isnan(e), torch.isnan(a)
    if bool((a_nan & ~e_nan).any()):
        raise Mismatch("nan", f"{where}: {int((a_nan & ~e_nan).sum())} NaN values where the reference has numbers")
    if bool((e_nan & ~a_nan).any()):
        raise Mismatch("mismatch", f"{where}: numbers where the reference has NaN")
    finite = ~e_nan
    e_inf, a_inf = torch.isinf(e) & finite, torch.isinf(a) & finite
    if not torch.equal(e_inf, a_inf) or not torch.equal(e[e_inf], a[a_inf]):
        raise Mismatch("mismatch", f"{where}: infinities differ from the reference's")
    close = finite & ~e_inf
    error = (a[close] - e[close]).abs()
    max_abs = float(error.max()) if error.numel() else 0.0
    atol, rtol = _tolerance(tolerance, str(expected.dtype).removeprefix("torch."))
    bad = error > atol + rtol * e[close].abs()
    if bool(bad.any()):
        raise Mismatch("mismatch", f"{where}: {int(bad.sum())} of {expected.numel()} values outside "
                                   f"atol={atol} rtol={rtol}; max abs error {max_abs:.3g}")
    return max_abs


def compare(expected, actual, where: str, tolerance: dict) -> float:
    """Returns the max abs error between two output trees; raises Mismatch where they differ."""
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise Mismatch("mismatch", f"{where}: a {type(actual).__name__}, expected a tensor")
        return _compare_tensors(expected, actual, where, tolerance)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            got = sorted(actual) if isinstance(actual, dict) else type(actual).__name__
            raise Mismatch("mismatch", f"{where}: entries {got}, expected {sorted(expected)}")
        return max((compare(expected[k], actual[k], f"{where}[{k!r}]", tolerance) for k in expected), default=0.0)
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise Mismatch("mismatch", f"{where}: {type(actual).__name__} of length "
                                       f"{len(actual) if isinstance(actual, (list, tuple)) else '-'}, "
                                       f"expected {len(expected)} items")
        return max((compare(e, a, f"{where}[{i}]", tolerance) for i, (e, a) in enumerate(zip(expected, actual))),
                   default=0.0)
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        atol, rtol = _tolerance(tolerance, "float64")
        if not (math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol)
                or (math.isnan(expected) and math.isnan(actual))):
            raise Mismatch("nan" if math.isnan(actual) else "mismatch", f"{where}: {actual!r}, expected {expected!r}")
        return abs(actual - expected) if math.isfinite(expected) else 0.0
    if type(actual) is not type(expected) or actual != expected:
        raise Mismatch("mismatch", f"{where}: {actual!r}, expected {expected!r}")
    return 0.0


def check(spec: dict) -> dict:
    """Returns the verdict: ok, kind, message, and per-case names and max abs errors."""
    import torch

    expected = torch.load(spec["expected"], map_location="cpu", weights_only=True)
    try:
        actual = torch.load(spec["actual"], map_location="cpu", weights_only=True)
    except Exception as error:  # a forged or truncated file is the candidate's failure
        return {"ok": False, "kind": "runtime_error", "message": f"unreadable outputs: {error}", "cases": []}
    if not isinstance(expected, dict):
        expected, actual = {"result": expected}, {"result": actual}
    if not expected:
        return {"ok": False, "kind": "harness_error", "message": "the reference produced no outputs", "cases": []}
    if not isinstance(actual, dict) or set(actual) != set(expected):
        got = sorted(actual) if isinstance(actual, dict) else type(actual).__name__
        return {"ok": False, "kind": "mismatch", "cases": [],
                "message": f"outputs for {got}, expected outputs for {sorted(expected)}"}
    cases = []
    for name in expected:
        try:
            cases.append({"name": name, "max_abs_err": compare(expected[name], actual[name], name, spec["tolerance"])})
        except Mismatch as mismatch:
            return {"ok": False, "kind": mismatch.kind, "message": str(mismatch), "cases": cases}
    return {"ok": True, "kind": None, "message": "", "cases": cases}


if __name__ == "__main__":
    spec_ = json.loads(pathlib.Path(sys.argv[1]).read_text())
    pathlib.Path(spec_["report"]).write_text(json.dumps(check(spec_)))
