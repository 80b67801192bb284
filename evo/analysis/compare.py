"""Compare the campaigns of a sweep folder, in total and at equal compute.

A sweep's cells differ in how much they spend (10 islands cost 10 times one), so comparing
final numbers alone rewards the biggest cell. For each unit of compute (evaluations, tokens,
USD, GPU-seconds) the common budget is what the cheapest cell spent in total; every cell is
then read at the last generation it finished within that budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import metrics as analysis
from evo.analysis import plots

CELL_MARKER = "sweep_cell.json"
"""Written by evo.sweep into each cell folder: the cell's overrides and how its run ended."""


def find_campaigns(folder: Path) -> list[Path]:
    """Returns the campaign folders directly under a sweep folder, sorted by name."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no results folder at {folder}")
    found = sorted(p for p in folder.iterdir() if (p / "campaign.json").is_file())
    if not found:
        raise ValueError(f"{folder} holds no campaign: neither it nor any subfolder has a "
                         "campaign.json (is it the right folder? has the run started?)")
    return found


def read_marker(cell: Path) -> dict[str, Any]:
    """Returns a cell's sweep marker, or {} for a campaign not made by evo sweep."""
    marker = cell / CELL_MARKER
    return json.loads(marker.read_text()) if marker.is_file() else {}


def at_budget(generations: pd.DataFrame, measure: str, budget: float) -> dict[str, Any]:
    """Returns the metrics of the last generation whose cumulative spend fits the budget.

    A cell whose first generation already costs more than the budget finished nothing
    within it: accuracy 0, no speedup.
    """
    within = generations[generations[measure] <= budget * (1 + 1e-9)]
    if within.empty:
        return {"generation": None, "spent": 0.0, "exec_accuracy": 0.0, "pass_at_1": 0.0,
                "speedup_geomean": None}
    last = within.iloc[-1]
    return {"generation": int(within.index[-1]), "spent": float(last[measure]),
            "exec_accuracy": last["exec_accuracy"], "pass_at_1": last["pass_at_1"],
            "speedup_geomean": last["speedup_geomean"]}


def equal_compute(curves: dict[str, pd.DataFrame]) -> dict[str, dict[str, Any]]:
    """Returns, per unit every cell spent, the common budget and each cell's metrics at it."""
    comparison = {}
    for measure in analysis.SPEND_MEASURES:
        totals = {cell: float(table[measure].iloc[-1]) for cell, table in curves.items()}
        if not totals or min(totals.values()) <= 0:
            continue  # a unit some cell never spent (tokens offline) gives no common budget
        budget = min(totals.values())
        comparison[measure] = {"budget": budget, "cells": {
            cell: at_budget(table, measure, budget) for cell, table in curves.items()}}
    return comparison


def cell(path: Path, results: analysis.Results) -> tuple[dict[str, Any], pd.DataFrame]:
    """Returns a campaign's row of its sweep (overrides and status from its marker, suite
    metrics, spend) and its by-generation table."""
    generations = analysis.by_generation(results)
    marker = read_marker(path)
    return {
        "cell": path.name,
        "campaign": results.name,
        "overrides": marker.get("overrides", {}),
        "status": marker.get("status", "unknown"),
        "stopped_by": marker.get("stopped_by"),
        "generations": int(generations.index[-1]) + 1,
        "backends": results.backends,
        "suite": analysis.suite_metrics(analysis.task_table(results)),
        "spend": {m: float(generations[m].iloc[-1]) for m in analysis.SPEND_MEASURES},
        "notes": analysis.timing_notes(results),
    }, generations


def sweep_report(folder: Path, figures_dir: Path) -> dict[str, Any]:
    """Returns one row per campaign of a sweep folder plus the equal-compute comparison,
    and draws accuracy vs spend with one line per campaign."""
    cells, skipped, curves = [], [], {}
    for path in find_campaigns(folder):
        try:
            results = analysis.load(path)
        except ValueError as error:  # a cell not started or broken: say so, compare the rest
            skipped.append({"cell": path.name, "reason": str(error)})
            continue
        row, curves[path.name] = cell(path, results)
        cells.append(row)
    backends = [backend for row in cells for backend in row["backends"]]
    figures = [str(plots.save(plots.accuracy_vs_spend(curves, backends=backends),
                              figures_dir / "sweep_accuracy_vs_spend.png"))] if curves else []
    return {"sweep": str(folder), "cells": cells, "skipped": skipped,
            "equal_compute": equal_compute(curves), "figures": figures}
