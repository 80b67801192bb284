"""What the HTML page plots per task: how a campaign went over generations and wall time.

Every function is a few vectorized pandas operations over the rows of evo.analysis.metrics,
so a large campaign's page stays quick to make (experiments/perf/html_report_bench.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evo.analysis import metrics, torch_comparison

TORCH_MODE = "default"
"""The torch.compile mode the page's "vs torch.compile" curve reads (torch_comparison.MODES)."""


def correct_rate_by_generation(results: metrics.Results) -> pd.DataFrame:
    """Returns generation x task: the share of that generation's candidates that are correct."""
    rows = results.evaluations
    rate = rows.groupby(["generation", "task"])["correct"].mean().unstack("task")
    return rate.reindex(index=metrics.generations(results), columns=results.task_names)


def failure_kinds_by_generation(rows: pd.DataFrame, index: pd.Index) -> pd.DataFrame:
    """Returns generation x outcome counts of one task's rows: "correct" or the failure kind."""
    outcome = rows["failure_kind"].where(~rows["correct"].astype(bool), "correct")
    outcome = outcome.fillna("incorrect").astype(str)
    counts = outcome.groupby(rows["generation"]).value_counts().unstack(fill_value=0)
    order = (["correct"] if "correct" in counts.columns else []) + sorted(
        c for c in counts.columns if c != "correct")
    return counts.reindex(index=index, columns=order, fill_value=0)


def best_by_wall_time(results: metrics.Results, started_at: float | None,
                      speedups: pd.Series | None = None) -> dict[str, pd.Series]:
    """Returns per task the best speedup so far at each time a part brought a new best
    (index: seconds since the campaign started; the task's last part closes the line).
    `speedups` (by row label, e.g. torch_speedups) replaces the rows' speedup over the
    baseline."""
    rows, timed = results.evaluations, metrics.timed_rows(results.evaluations)
    if speedups is not None:
        timed = timed.loc[speedups.index].assign(speedup=speedups)
    start = started_at if started_at is not None else float(rows["written_at"].min())
    last_part = rows.groupby("task")["written_at"].max()
    curves = {}
    for task, group in timed.sort_values("written_at").groupby("task"):
        best = group["speedup"].cummax()
        improved = best.ne(best.shift())
        seconds = (group["written_at"] - start).clip(lower=0)
        curve = pd.Series(best[improved].to_numpy(), index=seconds[improved].to_numpy())
        last = float(last_part[task] - start)
        curves[task] = pd.concat([curve, pd.Series([curve.iloc[-1]], index=[max(last, 0.0)])])
    return curves


def _torch_latencies(versus: dict) -> pd.Series | None:
    """Returns torch.compile's median latency per (device, task, case) on the campaign's
    devices, or None when the report's comparison did not join any."""
    if versus.get("status") != "joined":
        return None
    timings = torch_comparison.load_timings(versus["source"])
    timings = timings[(timings["mode"] == TORCH_MODE) & (timings["status"] == "ok")
                      & timings["device"].isin(versus["devices"])]
    if timings.empty:
        return None
    return timings.drop_duplicates(["device", "task", "case"], keep="last").set_index(
        ["device", "task", "case"])["median_us"].astype(float)


def torch_speedups(results: metrics.Results, versus: dict) -> pd.Series | None:
    """Returns each correct row's speedup over torch.compile, by row label: the geometric
    mean over its cases of torch's latency / its own (rows with a case torch did not time
    are left out); None without torch timings joined by `versus` (the comparison) or rows."""
    torch_us = _torch_latencies(versus)
    if torch_us is None:
        return None
    timed = metrics.timed_rows(results.evaluations)
    cases = _cases(timed[timed["timing_meaningful"].astype(bool)])
    if cases.empty:
        return None
    keys = pd.MultiIndex.from_arrays([cases["device"], cases["task"], cases["case"]])
    ratio = torch_us.reindex(keys).to_numpy() / cases["latency_us"].to_numpy()
    logs = pd.Series(np.log(ratio), index=cases.index)
    per_row = logs.groupby(level=0).agg(["mean", "count", "size"])
    per_row = per_row[per_row["count"] == per_row["size"]]
    return np.exp(per_row["mean"]) if len(per_row) else None


def _cases(rows: pd.DataFrame) -> pd.DataFrame:
    """Returns one row per case of each row (device, task, case, latency_us), labelled as
    its row, built from whole arrays (DataFrame.explode takes a row at a time)."""
    names = [() if value is None else value for value in rows["case_names"]]
    latencies = [() if value is None else value for value in rows["latency_us"]]
    counts = np.fromiter(map(len, names), int, len(names))
    if not np.array_equal(counts, np.fromiter(map(len, latencies), int, len(latencies))):
        raise ValueError("an evaluations row's case_names and latency_us differ in length")
    if not counts.sum():
        return pd.DataFrame(columns=["device", "task", "case", "latency_us"])
    return pd.DataFrame({"device": np.repeat(rows["device"].to_numpy(), counts),
                         "task": np.repeat(rows["task"].to_numpy(), counts),
                         "case": np.concatenate(names),
                         "latency_us": np.concatenate(latencies).astype(float)},
                        index=np.repeat(rows.index.to_numpy(), counts))
