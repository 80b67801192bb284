"""A campaign folder read, and its metrics: per task, per suite, by generation, by runs.

Definitions follow GEAK (call / execution accuracy: the fraction of tasks with a candidate
that runs / is correct; speedup averaged over solved tasks) and KernelBench (fast_p: the
fraction of all tasks with a correct candidate faster than p x the baseline). Each island is
one run; a run is solved when any of its candidates is correct; pass@k is estimated over a
task's runs (evo.analysis.passk). The seeds (generation 0, operator "seed": the baseline kernel
each island starts from) count like any candidate: a task's best is never below its correct
seed, and a correct seed solves its runs from generation 0 (`timing_notes` says so). Compute
counts fresh rows only: a row with `reused` repeats a verdict scored once.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from evo import records
from evo.analysis import parts, passk

FAST_P = (0.0, 1.0, 1.5, 2.0)
"""KernelBench's speedup thresholds: fast_p counts tasks correct AND faster than p."""

SEED_OPERATOR = "seed"

REQUIRED_EVALUATION_COLUMNS = (
    "task", "island", "generation", "candidate_id", "operator", "call_ok", "correct",
    "speedup", "roofline_fraction", "timing_meaningful", "compile_s", "check_s", "bench_s",
)
EVALUATION_COLUMNS = REQUIRED_EVALUATION_COLUMNS + (
    "suite", "difficulty", "failure_kind", "reused", "case_names", "latency_us",
    "ref_latency_us", "device", "backend", "llm_model")
"""The evaluations columns the numbers read (sources, strategies and traces are left out)."""
CALL_COLUMNS = ("task", "generation", "prompt_tokens", "completion_tokens", "cost_usd",
                "failure_kind", "error", "finished_at")
"""The llm_calls columns the numbers read (the others hold whole prompts and answers)."""
SPEND_MEASURES = ("evaluations", "tokens", "usd", "gpu_s")
"""Units of compute, in the columns of `by_generation`."""


@dataclasses.dataclass(frozen=True)
class Results:
    """One campaign folder, read.

    Attributes:
      path: the campaign folder (holds campaign.json).
      name: the campaign's name.
      meta: campaign.json as a dict.
      evaluations: every evaluation row, the seeds' (generation 0) included.
      llm_calls: every LLM call row (empty in offline mode).
      configured_runs: islands per task from the config, or None when campaign.json lacks it.
      independent_runs: True when islands never exchange migrants (migration_interval = 0 or
        one island), False when they do, None when unknown.
    """

    path: Path
    name: str
    meta: dict
    evaluations: pd.DataFrame
    llm_calls: pd.DataFrame
    configured_runs: int | None
    independent_runs: bool | None

    @functools.cached_property
    def task_names(self) -> list[str]:
        """Returns every task of the campaign: those the config names, and those with rows.

        A task whose every offspring failed before scoring has no evaluation row; it still
        counts in the accuracy denominators.
        """
        named = _config_value(self.meta, "campaign", "tasks") or []
        called = self.llm_calls["task"].dropna() if "task" in self.llm_calls else []
        return sorted(set(named) | set(self.evaluations["task"]) | set(called))

    @functools.cached_property
    def difficulty(self) -> pd.Series:
        """Returns each task's difficulty level (float, NaN when unknown): its rows', else
        campaign.json's (a task with no row, every reply of it unusable, has only that one;
        campaigns from before it was recorded leave such a task out of every level)."""
        recorded = pd.Series(self.meta.get("difficulty") or {}, dtype=float)
        seen = (self.evaluations.groupby("task")["difficulty"].first().astype(float)
                if "difficulty" in self.evaluations and not self.evaluations.empty
                else pd.Series(dtype=float))
        return seen.combine_first(recorded).reindex(self.task_names)

    @property
    def backends(self) -> list[str]:
        """The backends its rows were scored on (a campaign has one: cuda | rocm | interpreter)."""
        column = self.evaluations.get("backend")
        return sorted(column.dropna().astype(str).unique()) if column is not None else []

    def islands_of(self, task: str) -> list[int]:
        """Returns a task's runs: the configured islands and any other island seen in rows."""
        seen = self._islands_seen.get(task, ())
        return sorted(set(range(self.configured_runs or 0)) | {int(island) for island in seen})

    @functools.cached_property
    def _islands_seen(self) -> dict:
        """Task -> the islands its rows hold, grouped once (tables ask once per task)."""
        if self.evaluations.empty:
            return {}
        return self.evaluations.groupby("task")["island"].unique().to_dict()


def _config_value(meta: dict, section: str, key: str) -> Any:
    section_value = meta.get("config", {}).get(section, {})
    return section_value.get(key) if isinstance(section_value, dict) else None


def read_meta(path: Path) -> dict:
    """Returns a campaign folder's campaign.json; raises ValueError naming the problem."""
    meta_path = path / "campaign.json"
    if not meta_path.is_file():
        raise ValueError(f"{path} is not a campaign folder: it has no campaign.json")
    try:
        return json.loads(meta_path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{meta_path}: not valid JSON ({error})") from error


def campaign_name(meta: dict, path: Path) -> str:
    return str(_config_value(meta, "campaign", "name") or meta.get("name") or path.name)


def load(directory: Path | str) -> Results:
    """Reads a campaign folder, refusing a part that does not read (`evo report` never
    reports on part of the rows); raises FileNotFoundError / ValueError naming the problem."""
    path = Path(directory)
    if not path.is_dir():
        raise FileNotFoundError(f"no results folder at {path}")
    meta = read_meta(path)
    reader = parts.PartReader()
    evaluations = parts.frame(reader.read(path / "evaluations", EVALUATION_COLUMNS, True).table)
    if evaluations.empty:
        raise ValueError(f"campaign {path} has no evaluations yet (no rows in "
                         f"{path / 'evaluations'})")
    missing = missing_columns(evaluations)
    if missing:
        raise ValueError(f"{path / 'evaluations'}: missing columns {missing}")
    calls = parts.frame(reader.read(path / "llm_calls", CALL_COLUMNS, True).table)
    return results_of(path, meta, evaluations, calls)


def missing_columns(evaluations: pd.DataFrame) -> list[str]:
    return [c for c in REQUIRED_EVALUATION_COLUMNS if c not in evaluations.columns]


def results_of(path: Path, meta: dict, evaluations: pd.DataFrame,
               llm_calls: pd.DataFrame) -> Results:
    """Returns the Results of rows already read (`load`'s, or a live page's own reader)."""
    islands = _config_value(meta, "search", "islands")
    interval = _config_value(meta, "search", "migration_interval")
    independent = None if islands is None or interval is None else (islands == 1 or interval == 0)
    return Results(path=path, name=campaign_name(meta, path), meta=meta,
                   evaluations=comparable_speedups(evaluations), llm_calls=llm_calls,
                   configured_runs=int(islands) if islands is not None else None,
                   independent_runs=independent)


def comparable_speedups(evaluations: pd.DataFrame) -> pd.DataFrame:
    """Returns the rows with `speedup` and `worst_speedup` nulled wherever a latency of
    `latency_us` is null: such a candidate was timed on some cases only (a screened clear
    loser), and a speedup over fewer cases must never rank against one over all of them.
    Rows written before the cascade nulled them itself still carry one; every reader
    (report, best, fast_p, plots, sweeps) goes through here."""
    if "latency_us" not in evaluations.columns or evaluations.empty:
        return evaluations
    keep = [records.speedup_if_fully_timed(True, speedup, latencies) is not None
            for speedup, latencies in zip(evaluations["speedup"], evaluations["latency_us"])]
    evaluations = evaluations.copy()
    for column in ("speedup", "worst_speedup"):
        if column in evaluations.columns:
            evaluations[column] = evaluations[column].where(keep)
    return evaluations


def geomean(values: pd.Series) -> float | None:
    """Returns the geometric mean of positive values, None when there are none."""
    positive = values[values > 0]
    return float(np.exp(np.log(positive).mean())) if len(positive) else None


def run_table(results: Results) -> pd.DataFrame:
    """Returns one row per (task, island) run: called, solved, best_speedup (0 if none).

    Every configured island of every task appears, including runs without a single row
    yet: they count as unsolved rather than vanishing from the denominator.
    """
    rows = results.evaluations
    correct = rows[rows["correct"].astype(bool)]
    grouped = rows.groupby(["task", "island"])
    runs = pd.DataFrame({
        "called": grouped["call_ok"].any(),
        "solved": grouped["correct"].any(),
        "best_speedup": correct.groupby(["task", "island"])["speedup"].max(),
    })
    runs = runs.reindex(pd.MultiIndex.from_tuples(
        [(t, i) for t in results.task_names for i in results.islands_of(t)],
        names=["task", "island"]))
    runs[["called", "solved"]] = runs[["called", "solved"]].fillna(False).astype(bool)
    runs["best_speedup"] = runs["best_speedup"].fillna(0.0)
    return runs


def timed_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Returns the correct rows with a (comparable) speedup."""
    return rows[rows["correct"].astype(bool) & rows["speedup"].notna()]


def best_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Returns the fastest correct timed row of each task, indexed by task."""
    timed = timed_rows(rows)
    if timed.empty:
        return timed.set_index("task")
    return timed.loc[timed.groupby("task")["speedup"].idxmax()].set_index("task")


def timing_meaningful(rows: pd.DataFrame) -> bool | None:
    """Returns whether every speedup of these rows was timed meaningfully: False when one
    was not (the interpreter), None when none was timed. A figure made from them is shown
    or left out by it (evo.analysis.speedup_cells)."""
    return all_meaningful(rows.loc[rows["speedup"].notna(), "timing_meaningful"])


def all_meaningful(flags: Iterable) -> bool | None:
    """Returns the `timing_meaningful` of several figures (tasks, cells) taken together:
    False when one is False, None when none is known (nothing timed), else True."""
    known = [bool(flag) for flag in flags if flag is not None and pd.notna(flag)]
    return all(known) if known else None


def task_table(results: Results) -> pd.DataFrame:
    """Returns one row per task: candidates, rates, runs called / solved, best kernel."""
    rows = results.evaluations
    runs = run_table(results).groupby("task")
    meta = rows.groupby("task").first()
    table = pd.DataFrame({
        "suite": meta.get("suite", pd.Series("", index=meta.index)),
        "candidates": rows.groupby("task").size(),
        "call_rate": rows.groupby("task")["call_ok"].mean(),
        "correct_rate": rows.groupby("task")["correct"].mean(),
        "runs": runs.size(),
        "runs_called": runs["called"].sum(),
        "runs_solved": runs["solved"].sum(),
    }).reindex(results.task_names)
    table.insert(1, "difficulty", results.difficulty)
    table["candidates"] = table["candidates"].fillna(0).astype(int)
    best = best_rows(rows)
    table["best_speedup"] = best["speedup"]
    table["roofline_fraction"] = best["roofline_fraction"]
    table["best_candidate_id"] = best["candidate_id"]
    table["timing_meaningful"] = pd.Series(
        {task: timing_meaningful(group) for task, group in rows.groupby("task")}, dtype=object)
    return table


def pass_curves(tasks: pd.DataFrame, column: str) -> dict[str, dict[int, float]]:
    """Returns {task: {k: pass@k}} from a task table's runs and `column` (runs_solved...)."""
    return {name: passk.pass_at_k_curve(int(row["runs"]), int(row[column]))
            for name, row in tasks.iterrows()}


def suite_metrics(tasks: pd.DataFrame) -> dict[str, Any]:
    """Returns GEAK's and KernelBench's suite numbers from a task table, and whether every
    task's speedups were timed meaningfully (None: no task was timed)."""
    count = len(tasks)
    speedups = tasks["best_speedup"].dropna()
    solved, called = pass_curves(tasks, "runs_solved"), pass_curves(tasks, "runs_called")
    common_k = range(1, int(tasks["runs"].min()) + 1) if count else range(0)
    return {
        "tasks": count,
        "call_accuracy": float((tasks["runs_called"] > 0).mean()) if count else None,
        "exec_accuracy": float((tasks["runs_solved"] > 0).mean()) if count else None,
        "speedup_mean": float(speedups.mean()) if len(speedups) else None,
        "speedup_geomean": geomean(speedups),
        "fast_p": {f"{p:g}": float((speedups > p).sum() / count) if count else None
                   for p in FAST_P},
        "pass_at_k": {str(k): float(np.mean([c[k] for c in solved.values()])) for k in common_k},
        "call_pass_at_k": {str(k): float(np.mean([c[k] for c in called.values()]))
                           for k in common_k},
        "timing_meaningful": all_meaningful(tasks["timing_meaningful"]),
    }


def generations(results: Results) -> pd.RangeIndex:
    return pd.RangeIndex(int(results.evaluations["generation"].max()) + 1, name="generation")


def llm_spend(calls: pd.DataFrame) -> pd.DataFrame:
    """Returns the tokens and USD of LLM call rows by generation (not cumulative)."""
    generation = calls["generation"].fillna(0).astype(int)
    return pd.DataFrame({
        "tokens": calls["prompt_tokens"].fillna(0) + calls["completion_tokens"].fillna(0),
        "usd": calls["cost_usd"].fillna(0.0)}).groupby(generation).sum()


def spend_by_generation(results: Results) -> pd.DataFrame:
    """Returns the compute spent in each generation (not cumulative), indexed by generation:
    evaluations and GPU-seconds of fresh rows (a reused row was not scored again), tokens
    and USD of every LLM call."""
    evals = results.evaluations
    fresh = evals[~evals["reused"].astype(bool)] if "reused" in evals else evals
    gpu_s = fresh["compile_s"].fillna(0) + fresh["check_s"].fillna(0) + fresh["bench_s"].fillna(0)
    spend = pd.DataFrame({"evaluations": fresh.groupby("generation").size(),
                          "gpu_s": gpu_s.groupby(fresh["generation"]).sum()})
    if not results.llm_calls.empty:
        spend = spend.join(llm_spend(results.llm_calls), how="outer")
    return spend.reindex(columns=list(SPEND_MEASURES)).fillna(0).astype({"evaluations": int})


def by_generation(results: Results) -> pd.DataFrame:
    """Returns sequential scaling: `suite_metrics`' accuracies, mean pass@1 and speedups of
    all rows up to each generation, with the compute spent so far (cumulative);
    `found_accuracy` and `found_speedup_geomean` leave the seeds out (with correct seeds exec
    accuracy is 1.0 from generation 0 and says nothing of the search). Computed from each
    run's first call / first correct generation, not a task table per generation."""
    rows, index, tasks = results.evaluations, generations(results), results.task_names
    runs = pd.Series({task: len(results.islands_of(task)) for task in tasks}, dtype=float)

    def first(flag: str, by: list[str], among: pd.DataFrame = rows) -> pd.Series:
        return among[among[flag].astype(bool)].groupby(by)["generation"].min()

    def share_of_tasks(first_generation: pd.Series) -> pd.Series:
        return first_generation.value_counts().reindex(index, fill_value=0).cumsum() / len(tasks)

    solved = (first("correct", ["task", "island"]).reset_index()
              .groupby(["generation", "task"]).size().unstack("task")
              .reindex(index=index, columns=tasks).fillna(0).cumsum())
    best = best_speedup_by_generation(results)
    found = best_so_far(results, timed_rows(rows[rows["operator"] != SEED_OPERATOR])["speedup"])
    table = pd.DataFrame({
        "call_accuracy": share_of_tasks(first("call_ok", ["task"])),
        "exec_accuracy": share_of_tasks(first("correct", ["task"])),
        "found_accuracy": share_of_tasks(
            first("correct", ["task"], rows[rows["operator"] != SEED_OPERATOR])),
        "pass_at_1": (solved / runs).mean(axis=1) if runs.min() >= 1 else None,
        "speedup_mean": best.mean(axis=1),
        "speedup_geomean": _geomeans(best),
        "found_speedup_geomean": _geomeans(found),
        "fast_1": (best > 1.0).sum(axis=1) / len(tasks)}, index=index)
    return table.join(spend_by_generation(results).reindex(index).fillna(0.0).cumsum())


def _geomeans(best: pd.DataFrame) -> pd.Series:
    """Returns each row's geometric mean over its positive values (NaN: none)."""
    return np.exp(np.log(best.where(best > 0)).mean(axis=1))


def best_speedup_by_generation(results: Results) -> pd.DataFrame:
    """Returns generation x task: the best correct speedup found up to that generation."""
    return best_so_far(results, timed_rows(results.evaluations)["speedup"])


def best_so_far(results: Results, speedups: pd.Series) -> pd.DataFrame:
    """Returns generation x task: the best of `speedups` (by row label) up to each generation."""
    rows = results.evaluations.loc[speedups.index, ["generation", "task"]]
    best = speedups.groupby([rows["generation"], rows["task"]]).max().unstack("task")
    return best.reindex(index=generations(results), columns=results.task_names).cummax().ffill()


def by_runs(results: Results, tasks: pd.DataFrame) -> pd.DataFrame:
    """Returns parallel scaling, indexed by k runs: mean pass@k and call pass@k over tasks,
    and the expected best speedup of k runs (a run without a correct kernel counts 0),
    averaged over tasks solved by any run."""
    runs = run_table(results)
    solved_tasks = tasks.index[tasks["runs_solved"] > 0]
    suite = suite_metrics(tasks)
    records = []
    for key, pass_k in suite["pass_at_k"].items():
        k = int(key)
        best = [passk.expected_best_of_k(runs.loc[t, "best_speedup"].tolist(), k)
                for t in solved_tasks]
        records.append({"k": k, "pass_at_k": pass_k, "call_pass_at_k": suite["call_pass_at_k"][key],
                        "expected_best_speedup": float(np.mean(best)) if best else None})
    return pd.DataFrame(records, columns=["k", "pass_at_k", "call_pass_at_k",
                                          "expected_best_speedup"]).set_index("k")


def by_difficulty(tasks: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Returns suite metrics per task difficulty (GEAK Table 3)."""
    return {f"{difficulty:g}": suite_metrics(group)
            for difficulty, group in tasks.groupby("difficulty")}


def timing_notes(results: Results) -> list[str]:
    """Returns warnings a reader needs before trusting the numbers."""
    notes = []
    timed = results.evaluations[results.evaluations["speedup"].notna()]
    meaningless = timed[~timed["timing_meaningful"].astype(bool)]
    if len(meaningless):
        backends = sorted(set(meaningless.get("backend", pd.Series(["unknown"])).astype(str)))
        notes.append(f"{len(meaningless)} of {len(timed)} timed rows have timing_meaningful=False "
                     f"(backend {', '.join(backends)}): their speedups are recorded but say "
                     "nothing about GPU performance")
    if results.independent_runs is False:
        notes.append("islands exchange migrants (migration_interval > 0): pass@k over islands "
                     "is not over independent runs")
    evals = results.evaluations
    seeded = evals[(evals["operator"] == SEED_OPERATOR) & evals["correct"].astype(bool)]
    if len(seeded):
        notes.append(f"{seeded['task'].nunique()} of {len(results.task_names)} tasks start from "
                     f"a correct seed kernel (generation 0, operator \"{SEED_OPERATOR}\"): it "
                     "counts like any candidate, so their runs are solved from generation 0 "
                     "and their best speedup is at least the seed's")
    return notes


def to_json_value(value: Any) -> Any:
    """Returns value with NaN as None and numpy scalars as Python ones, for json.dumps."""
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value
