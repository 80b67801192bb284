"""Compare the campaigns of a sweep folder: in total, at equal compute, and on the grid of
generations x islands.

A sweep's cells differ in how much they spend (10 islands cost 10 times one), so comparing
final numbers alone rewards the biggest cell. For each unit of compute (evaluations, tokens,
USD, GPU-seconds) cells are read at several common budgets: the totals cells spent, those
within BUDGET_TOLERANCE of each other one budget (17 and 18 evaluations are equal compute, read
side by side at their ends), at most BUDGETS of them, spread from the smallest; every cell
that spent at least a budget's lower end is read at the last generation it finished within
its upper end. The smallest budget alone would catch every wide cell at generation 0. Seeds
are left out of accuracy and speedup alike; speedups carry their noise band
(evo.analysis.noise): the seeds of every cell, the baseline against itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evo.analysis import best, noise, scaling, speedup_cells, sweep_plots
from evo.analysis.html_page import number
from evo.analysis.sweep_rows import find_campaigns, read_marker
from evo.analysis import metrics as analysis

BUDGETS = 4
"""Most budgets per unit of compute in the equal-compute comparison."""
BUDGET_TOLERANCE = 0.1
"""Totals within this fraction of the smallest of them are one budget (equal compute)."""


def at_budget(generations: pd.DataFrame, measure: str, budget: float) -> dict[str, Any]:
    """Returns the metrics of the last generation whose cumulative spend fits the budget.

    A cell whose first generation already costs more than the budget finished nothing
    within it: accuracy 0, no speedup.
    """
    within = generations[generations[measure] <= budget * (1 + 1e-9)]
    if within.empty:
        return {"generation": None, "spent": 0.0, "exec_accuracy": 0.0, "found_accuracy": 0.0,
                "pass_at_1": 0.0, "speedup_geomean": None, "found_speedup_geomean": None}
    last = within.iloc[-1]
    return {"generation": int(within.index[-1]), "spent": float(last[measure]),
            **{metric: last[metric] for metric in (
                "exec_accuracy", "found_accuracy", "pass_at_1", "speedup_geomean",
                "found_speedup_geomean")}}


def budgets(totals: list[float]) -> list[tuple[float, float]]:
    """Returns the budgets to compare at, as (lowest, highest) totals grouped into one: the
    distinct totals, each within BUDGET_TOLERANCE of its group's lowest, whose lowest at
    least two cells reached; at most BUDGETS of them, spread by rank from the smallest."""
    groups: list[list[float]] = []
    for total in sorted(set(totals)):
        if groups and total <= groups[-1][0] * (1 + BUDGET_TOLERANCE):
            groups[-1].append(total)
        else:
            groups.append([total])
    reached = [(group[0], group[-1]) for group in groups
               if sum(total >= group[0] * (1 - 1e-9) for total in totals) >= 2]
    if len(reached) <= BUDGETS:
        return reached
    return [reached[int(i)] for i in np.linspace(0, len(reached) - 1, BUDGETS).round()]


def equal_compute(curves: dict[str, pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Returns, per unit every cell spent, a list of budgets (`budget`, and `low`: the
    lowest total grouped into it), each with the metrics at it of the cells that spent at
    least `low` (`cells`) and the totals of those that did not (`short`)."""
    comparison = {}
    for measure in analysis.SPEND_MEASURES:
        totals = {cell: float(table[measure].iloc[-1]) for cell, table in curves.items()}
        if not totals or min(totals.values()) <= 0:
            continue  # a unit some cell never spent (tokens offline) gives no common budget
        comparison[measure] = [{
            "budget": budget, "low": low,
            "cells": {cell: at_budget(curves[cell], measure, budget)
                      for cell, total in totals.items() if total >= low * (1 - 1e-9)},
            "short": {cell: total for cell, total in totals.items()
                      if total < low * (1 - 1e-9)}}
            for low, budget in budgets(list(totals.values()))]
    return comparison


def budget_heading(budget: dict[str, Any]) -> str:
    """Returns a budget's column heading: "<= 18", "<= 18 (17-18)" when totals were grouped."""
    low, high = number(budget["low"]), number(budget["budget"])
    return f"<= {high}" + (f" ({low}-{high})" if low != high else "")


def budget_text(budget: dict[str, Any], cell: str, meaningful: bool | None) -> str:
    """Returns a cell's reading at a budget it reached: "gen G: found acc / found speedup"
    (seeds left out of both), or "nothing finished"."""
    at = budget["cells"][cell]
    if at["generation"] is None:
        return "nothing finished"
    return (f"gen {at['generation']}: {number(at['found_accuracy'], '%')} / "
            f"{speedup_cells.cell(at['found_speedup_geomean'], 'x', meaningful)}")


def point_text(point: dict[str, Any]) -> str:
    """Returns a grid point's "found acc / found speedup" (seeds left out of both), with the
    count of cells averaged there when more than one."""
    count = len(point["cells"])
    speed = speedup_cells.cell(point["found_speedup_geomean"], "x", point["timing_meaningful"])
    return (f"{number(point['found_accuracy'], '%')} / {speed}"
            + (f" ({count} cells)" if count > 1 else ""))


def cell(path: Path, results: analysis.Results) -> tuple[dict[str, Any], pd.DataFrame]:
    """Returns a campaign's row of its sweep (overrides and status from its marker, its
    configured search knobs and operators mode, suite metrics, spend) and its by-generation
    table."""
    generations = analysis.by_generation(results)
    marker = read_marker(path)
    config = results.meta.get("config", {})
    search = config.get("search", {}) or {}
    return {
        "cell": path.name,
        "campaign": results.name,
        "overrides": marker.get("overrides", {}),
        "status": marker.get("status", "unknown"),
        "stopped_by": marker.get("stopped_by"),
        "search": {knob: search.get(knob) for knob in scaling.KNOBS},
        "mode": (config.get("operators", {}) or {}).get("mode"),
        "generations": int(generations.index[-1]) + 1,
        "backends": results.backends,
        "suite": {**analysis.suite_metrics(analysis.task_table(results)),
                  **{metric: generations[metric].iloc[-1]
                     for metric in ("found_accuracy", "found_speedup_geomean")}},
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


def read_cells(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, str]],
                                      dict[str, pd.DataFrame], pd.DataFrame]:
    """Returns a sweep folder's cells (`cell`'s rows), those skipped and why, their
    by-generation tables and every cell's evaluations with a `cell` column."""
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
    return cells, skipped, curves, (pd.concat(frames, ignore_index=True) if frames
                                    else pd.DataFrame())


def sweep_report(folder: Path, figures_dir: Path) -> dict[str, Any]:
    """Returns one row per campaign of a sweep folder and their comparison (`compared`),
    and draws the sweep's figures (evo.analysis.sweep_plots)."""
    cells, skipped, curves, rows = read_cells(folder)
    found = compared(cells, curves, rows)
    backends = [backend for row in cells for backend in row["backends"]]
    figures = sweep_plots.draw_all(cells, curves, found, backends, figures_dir) if curves else []
    return {"sweep": str(folder), "cells": cells, "skipped": skipped, **found,
            "figures": [str(f) for f in figures]}
