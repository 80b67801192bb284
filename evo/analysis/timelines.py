"""What the HTML page plots: per task, how a campaign went over generations and wall time.

Every function is a few vectorized pandas operations over the rows of evo.analysis.metrics,
so a large campaign's page stays quick to make (experiments/perf/html_report_bench.py). The
suite's accuracy curves are metrics.by_generation's definitions computed from each run's
first call / first correct generation instead of one task table per generation
(tests/test_html_report.py holds them equal).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evo.analysis import metrics, torch_comparison

TORCH_MODE = "default"
"""The torch.compile mode the page's "vs torch.compile" curve reads (torch_comparison.MODES)."""


def generations(results: metrics.Results) -> pd.RangeIndex:
    return pd.RangeIndex(int(results.evaluations["generation"].max()) + 1, name="generation")


def accuracy_by_generation(results: metrics.Results) -> pd.DataFrame:
    """Returns, per generation, call / execution accuracy and mean pass@1 of all rows so far."""
    rows, index = results.evaluations, generations(results)
    tasks = results.task_names
    seen = results.evaluations.groupby("task")["island"].unique()
    configured = set(range(results.configured_runs or 0))
    runs = pd.Series({t: len(configured | set(seen.get(t, ()))) for t in tasks}, dtype=float)

    def first(flag: str, by: list[str]) -> pd.Series:
        return rows[rows[flag].astype(bool)].groupby(by)["generation"].min()

    def cumulative_share(first_generation: pd.Series) -> pd.Series:
        counts = first_generation.value_counts().reindex(index, fill_value=0).cumsum()
        return counts / len(tasks) if tasks else counts * np.nan

    solved_runs = first("correct", ["task", "island"]).reset_index()
    solved = (solved_runs.groupby(["generation", "task"]).size().unstack("task")
              .reindex(index=index, columns=tasks).fillna(0).cumsum())
    pass_at_1 = (solved / runs.replace(0, np.nan)).fillna(0).mean(axis=1) if tasks else None
    return pd.DataFrame({"call_accuracy": cumulative_share(first("call_ok", ["task"])),
                         "exec_accuracy": cumulative_share(first("correct", ["task"])),
                         "pass_at_1": pass_at_1}, index=index)


def correct_rate_by_generation(results: metrics.Results) -> pd.DataFrame:
    """Returns generation x task: the share of that generation's candidates that are correct."""
    rows = results.evaluations
    rate = rows.groupby(["generation", "task"])["correct"].mean().unstack("task")
    return rate.reindex(index=generations(results), columns=results.task_names)


def failure_kinds_by_generation(rows: pd.DataFrame, index: pd.Index) -> pd.DataFrame:
    """Returns generation x outcome counts of one task's rows: "correct" or the failure kind."""
    outcome = rows["failure_kind"].where(~rows["correct"].astype(bool), "correct")
    outcome = outcome.fillna("incorrect").astype(str)
    counts = outcome.groupby(rows["generation"]).value_counts().unstack(fill_value=0)
    order = (["correct"] if "correct" in counts.columns else []) + sorted(
        c for c in counts.columns if c != "correct")
    return counts.reindex(index=index, columns=order, fill_value=0)


def _timed(results: metrics.Results) -> pd.DataFrame:
    rows = results.evaluations
    return rows[rows["correct"].astype(bool) & rows["speedup"].notna()]


def best_by_wall_time(results: metrics.Results, started_at: float | None,
                      speedups: pd.Series | None = None) -> dict[str, pd.Series]:
    """Returns per task the best speedup so far at each time a part brought a new best
    (index: seconds since the campaign started; the task's last part closes the line).
    `speedups` (by row label, e.g. torch_speedups) replaces the rows' speedup over the
    baseline."""
    rows, timed = results.evaluations, _timed(results)
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


def torch_latencies(results: metrics.Results, versus: dict) -> pd.Series | None:
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


def torch_speedups(results: metrics.Results, torch_us: pd.Series | None) -> pd.Series | None:
    """Returns each correct row's speedup over torch.compile, by row label: the geometric
    mean over its cases of torch's latency / its own (rows with a case torch did not time
    are left out); None without torch timings or such rows."""
    if torch_us is None:
        return None
    timed = _timed(results)
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


def versus_torch_by_generation(results: metrics.Results,
                               speedups: pd.Series | None) -> pd.DataFrame | None:
    """Returns generation x task: the best of `torch_speedups` so far; None without them."""
    if speedups is None:
        return None
    meta = results.evaluations.loc[speedups.index, ["generation", "task"]]
    best = speedups.groupby([meta["generation"], meta["task"]]).max().unstack("task")
    return best.reindex(index=generations(results), columns=results.task_names).cummax().ffill()


def llm_spend_by_generation(calls: pd.DataFrame | None, index: pd.Index) -> pd.DataFrame | None:
    """Returns one task's cumulative LLM tokens and USD per generation from its llm_calls
    rows, None without any."""
    if calls is None or calls.empty:
        return None
    generation = calls["generation"].fillna(0).astype(int)
    spend = pd.DataFrame({
        "tokens": (calls["prompt_tokens"].fillna(0) + calls["completion_tokens"].fillna(0)),
        "usd": calls["cost_usd"].fillna(0.0)}).groupby(generation).sum()
    return spend.reindex(index, fill_value=0).cumsum()


def spend_totals(results: metrics.Results) -> dict[str, float]:
    """Returns what the campaign spent: evaluations, LLM calls, tokens, USD, GPU-seconds
    (metrics' rules: a reused row is no evaluation and costs no GPU time, tokens and USD
    come from llm_calls)."""
    evals, calls = results.evaluations, results.llm_calls
    fresh = evals[~evals["reused"].astype(bool)] if "reused" in evals else evals
    gpu_s = float((fresh["compile_s"].fillna(0) + fresh["check_s"].fillna(0)
                   + fresh["bench_s"].fillna(0)).sum())
    tokens = usd = 0.0
    if not calls.empty:
        tokens = float(calls["prompt_tokens"].fillna(0).sum()
                       + calls["completion_tokens"].fillna(0).sum())
        usd = float(calls["cost_usd"].fillna(0).sum())
    return {"evaluations": float(len(fresh)), "llm_calls": float(len(calls)), "tokens": tokens,
            "usd": usd, "gpu_s": gpu_s}
