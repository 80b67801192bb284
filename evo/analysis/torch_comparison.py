"""A campaign's best kernels beside torch's own, per case: eager, torch.compile's default mode
and max-autotune-no-cudagraphs, as timed by experiments/perf/torch_baselines.py.

Torch's timings live in a file of their own (DIR/torch_timings.parquet, or one named with
`evo report --torch-timings`), not in the campaign's rows: they do not change with the
search, cost minutes of compilation, and are worth re-measuring after a torch upgrade
without re-running a campaign. They are joined only where their device name is the
campaign's: a latency from another GPU says nothing about this one.

Every ratio is a speedup of the search's best: the other latency / the best's latency, so
above 1 the best is faster. The best of a task is its fastest correct candidate (the
report's best speedup), read case by case from its `latency_us`; the baseline is that same
row's `ref_latency_us`, timed beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import metrics as analysis
from evo.analysis import parts

TIMINGS_FILE = "torch_timings.parquet"
"""Where `evo report DIR` looks for torch's timings when none is named."""
MODES = ("eager", "default", "max-autotune-no-cudagraphs")
REQUIRED_COLUMNS = ("task", "case", "mode", "device", "status", "median_us", "floor_us",
                    "copy_floor_us", "bound", "torch_op")
COPY_BANDWIDTH_BAR = 0.85
"""A memory-bound case counts as at the copy bandwidth from this fraction of it on."""
_NO_TIMINGS = pd.DataFrame(columns=list(REQUIRED_COLUMNS)).set_index("mode")
"""What a case without any torch timing reads as: every mode "missing"."""
LIBRARIES = {"cublas": "matmul-class vs cuBLAS", "sdpa": "flash attention vs SDPA"}
"""torch_op values whose eager timing is a vendor library: the best is read against it."""


def load_timings(path: Path) -> pd.DataFrame:
    """Reads a torch timings file; raises ValueError naming what is wrong with it."""
    read = parts.read_part(str(path), None)
    if isinstance(read, ValueError):
        raise read
    timings = read.table.to_pandas()
    missing = [c for c in REQUIRED_COLUMNS if c not in timings.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing} (is it from "
                         "experiments/perf/torch_baselines.py?)")
    return timings


def comparison(results: analysis.Results, timings_path: Path | str | None = None) -> dict[str, Any]:
    """Returns the per-case comparison and its summary, or a status and the reason there is none.

    status: "joined", "no_kernel" (nothing correct was timed), "needs_gpu" (an interpreter
    campaign), "no_timings" (no file; the message says how to make one) or "device_mismatch".
    A file named explicitly that does not exist raises FileNotFoundError.
    """
    best = analysis.best_rows(results.evaluations)
    if best.empty:
        return without("no_kernel", "no task has a correct timed kernel: nothing to compare "
                                     "with torch")
    on_gpu = best[best["timing_meaningful"].astype(bool)]
    if on_gpu.empty:
        return without("needs_gpu", "the comparison with torch needs a campaign timed on a "
                                     "GPU; this one was timed under the interpreter")
    path = Path(timings_path) if timings_path else results.path / TIMINGS_FILE
    if not path.is_file():
        if timings_path:
            raise FileNotFoundError(f"no torch timings file at {path}")
        return without("no_timings", "no torch timings: on the campaign's GPU run `python "
                        f"experiments/perf/torch_baselines.py --out {path}` (or pass "
                        "--torch-timings FILE) to compare with torch eager and torch.compile")
    every_device = load_timings(path)
    devices = sorted(set(on_gpu["device"].astype(str)))
    timings = every_device[every_device["device"].isin(devices)]
    if timings.empty:
        found = sorted(set(every_device["device"].astype(str)))
        return without("device_mismatch",
                        f"torch timings in {path} are for {found}, this campaign ran on "
                        f"{devices}: not joined (a latency from another GPU says nothing "
                        "about this one)")
    cases = _cases(on_gpu, timings)
    first = timings.iloc[0]
    return {"status": "joined", "message": None, "source": str(path), "devices": devices,
            "torch_version": first.get("torch_version"), "copy_gbs": first.get("copy_gbs"),
            "cases": cases, "summary": summarize(cases)}


def without(status: str, message: str) -> dict[str, Any]:
    return {"status": status, "message": message, "cases": [], "summary": None}


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    """Returns numerator / denominator, None when either is missing."""
    if numerator is None or denominator is None or pd.isna(numerator) or pd.isna(denominator) \
            or denominator <= 0:
        return None
    return float(numerator) / float(denominator)


def _cases(best: pd.DataFrame, timings: pd.DataFrame) -> list[dict[str, Any]]:
    """Returns one record per case of each task's best row, with torch's timings of that
    case on the same device (None where a mode has none, its status saying why)."""
    by_case = {key: group.drop_duplicates("mode", keep="last").set_index("mode")
               for key, group in timings.groupby(["device", "task", "case"])}
    records = []
    for task, row in best.iterrows():
        for case, best_us, baseline_us in zip(row["case_names"], row["latency_us"],
                                              row["ref_latency_us"]):
            if _number(best_us) is None:
                continue  # a case the row did not time (a clear loser elsewhere)
            torch_rows = by_case.get((row["device"], task, case), _NO_TIMINGS)
            status = {m: str(torch_rows.at[m, "status"]) if m in torch_rows.index else "missing"
                      for m in MODES}
            torch_us = {m: _number(torch_rows.at[m, "median_us"]) if status[m] == "ok" else None
                        for m in MODES}
            some = torch_rows.iloc[0] if len(torch_rows) else pd.Series(dtype=object)
            records.append({
                "task": task, "case": case, "best_us": best_us, "baseline_us": baseline_us,
                "torch_us": torch_us, "torch_status": status,
                "speedup": {"baseline": _ratio(baseline_us, best_us),
                            **{m: _ratio(torch_us[m], best_us) for m in MODES}},
                "roofline": _ratio(some.get("floor_us"), best_us),
                "copy_bandwidth": (_ratio(some.get("copy_floor_us"), best_us)
                                   if some.get("bound") == "memory" else None),
                "bound": some.get("bound"), "torch_op": some.get("torch_op"),
            })
    return records


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _against(cases: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Returns the geometric mean and the worst case of the best's speedup over `key`."""
    measured = [(c["speedup"][key], c) for c in cases if c["speedup"][key] is not None]
    if not measured:
        return {"geomean": None, "cases": 0, "worst": None}
    worst, case = min(measured, key=lambda pair: pair[0])
    return {"geomean": analysis.geomean(pd.Series([s for s, _ in measured])),
            "cases": len(measured),
            "worst": {"speedup": worst, "task": case["task"], "case": case["case"]}}


def summarize(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Returns the suite-level reading: the best against the baseline and each torch mode,
    against the vendor libraries torch calls in eager mode, and how many memory-bound cases
    move at least COPY_BANDWIDTH_BAR of the measured copy bandwidth."""
    memory = [c for c in cases if c["bound"] == "memory" and c["copy_bandwidth"] is not None]
    return {
        "versus": {key: _against(cases, key) for key in ("baseline",) + MODES},
        "libraries": {op: _against([c for c in cases if c["torch_op"] == op], "eager")
                      for op in LIBRARIES},
        "memory_bound": {"cases": len(memory),
                         "at_copy_bandwidth": sum(c["copy_bandwidth"] >= COPY_BANDWIDTH_BAR
                                                  for c in memory),
                         "bar": COPY_BANDWIDTH_BAR},
    }
