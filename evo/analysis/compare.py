"""Compare the campaigns of a sweep folder: in total, at equal compute, and on the grid of
generations x islands.

A sweep's cells differ in how much they spend (10 islands cost 10 times one), so comparing
final numbers alone rewards the biggest cell. For each unit of compute (evaluations, tokens,
USD, GPU-seconds) cells are read at several common budgets: each total some cell spent
(at most BUDGETS of them, spread from the smallest), every cell that spent at least that
much read at the last generation it finished within it. The smallest budget alone would
catch every wide cell at generation 0. Speedups carry their noise band (evo.analysis.noise):
the seeds of every cell, the baseline against itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evo.analysis import best, noise, scaling, sweep_plots
from evo.analysis.sweep_rows import find_campaigns, read_marker
from evo.analysis import metrics as analysis

BUDGETS = 4
"""Most budgets per unit of compute in the equal-compute comparison."""


def at_budget(generations: pd.DataFrame, measure: str, budget: float) -> dict[str, Any]:
    """Returns the metrics of the last generation whose cumulative spend fits the budget.

    A cell whose first generation already costs more than the budget finished nothing
    within it: accuracy 0, no speedup.
    """
    within = generations[generations[measure] <= budget * (1 + 1e-9)]
    if within.empty:
        return {"generation": None, "spent": 0.0, "exec_accuracy": 0.0, "found_accuracy": 0.0,
                "pass_at_1": 0.0, "speedup_geomean": None}
    last = within.iloc[-1]
    return {"generation": int(within.index[-1]), "spent": float(last[measure]),
            "exec_accuracy": last["exec_accuracy"], "found_accuracy": last["found_accuracy"],
            "pass_at_1": last["pass_at_1"], "speedup_geomean": last["speedup_geomean"]}


def budgets(totals: list[float]) -> list[float]:
    """Returns the budgets to compare at: the distinct totals that at least two cells
    reached, at most BUDGETS of them, spread by rank from the smallest."""
    reached = sorted({t for t in totals if sum(o >= t * (1 - 1e-9) for o in totals) >= 2})
    if len(reached) <= BUDGETS:
        return reached
    return [reached[int(i)] for i in np.linspace(0, len(reached) - 1, BUDGETS).round()]


def equal_compute(curves: dict[str, pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Returns, per unit every cell spent, a list of budgets, each with the metrics at it of
    the cells that spent that much (`cells`) and the totals of those that did not (`short`)."""
    comparison = {}
    for measure in analysis.SPEND_MEASURES:
        totals = {cell: float(table[measure].iloc[-1]) for cell, table in curves.items()}
        if not totals or min(totals.values()) <= 0:
            continue  # a unit some cell never spent (tokens offline) gives no common budget
        comparison[measure] = [{
            "budget": budget,
            "cells": {cell: at_budget(curves[cell], measure, budget)
                      for cell, total in totals.items() if total >= budget * (1 - 1e-9)},
            "short": {cell: total for cell, total in totals.items()
                      if total < budget * (1 - 1e-9)}}
            for budget in budgets(list(totals.values()))]
    return comparison


def cell(path: Path, results: analysis.Results) -> tuple[dict[str, Any], pd.DataFrame]:
    """Returns a campaign's row of its sweep (overrides and status from its marker, its
    configured search knobs, suite metrics, spend) and its by-generation table."""
    generations = analysis.by_generation(results)
    marker = read_marker(path)
    search = results.meta.get("config", {}).get("search", {}) or {}
    return {
        "cell": path.name,
        "campaign": results.name,
        "overrides": marker.get("overrides", {}),
        "status": marker.get("status", "unknown"),
        "stopped_by": marker.get("stopped_by"),
        "search": {knob: search.get(knob) for knob in scaling.KNOBS},
        "generations": int(generations.index[-1]) + 1,
        "backends": results.backends,
        "suite": {**analysis.suite_metrics(analysis.task_table(results)),
                  "found_accuracy": float(generations["found_accuracy"].iloc[-1])},
        "spend": {m: float(generations[m].iloc[-1]) for m in analysis.SPEND_MEASURES},
        "notes": analysis.timing_notes(results),
    }, generations


def compared(cells: list[dict[str, Any]], curves: dict[str, pd.DataFrame],
             rows: pd.DataFrame) -> dict[str, Any]:
    """Returns what a sweep's report and page show beside the cells: equal compute at
    several budgets, the generations x islands grid, each task's best candidate over every
    cell, and the noise (interpreter or not, the seeds' band); `rows` are every cell's
    evaluations with a `cell` column."""
    bands = noise.seed_bands(rows) if len(rows) else {}
    band = noise.suite_band(bands)
    return {"equal_compute": equal_compute(curves),
            "grid": scaling.grid(cells),
            "best_candidates": best.best_candidates(rows) if len(rows) else {},
            "timing_meaningful": not noise.meaningless(rows) if len(rows) else None,
            "noise_band": None if band is None else [band.low, band.high],
            "noise_notes": noise.notes(rows) if len(rows) else []}


def with_cell(results: analysis.Results, name: str) -> pd.DataFrame:
    """Returns a cell's evaluations with its name in a `cell` column."""
    return results.evaluations.assign(cell=name)


def sweep_report(folder: Path, figures_dir: Path) -> dict[str, Any]:
    """Returns one row per campaign of a sweep folder and their comparison (`compared`),
    and draws the sweep's figures (evo.analysis.sweep_plots)."""
    cells, skipped, curves, frames = [], [], {}, []
    for path in find_campaigns(folder):
        try:
            results = analysis.load(path)
        except ValueError as error:  # a cell not started or broken: say so, compare the rest
            skipped.append({"cell": path.name, "reason": str(error)})
            continue
        row, curves[path.name] = cell(path, results)
        cells.append(row)
        frames.append(with_cell(results, path.name))
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    found = compared(cells, curves, rows)
    backends = [backend for row in cells for backend in row["backends"]]
    figures = sweep_plots.draw_all(cells, curves, found, backends, figures_dir) if curves else []
    return {"sweep": str(folder), "cells": cells, "skipped": skipped, **found,
            "figures": [str(f) for f in figures]}
