"""The scaling question of a sweep: does more sequential compute (generations) or more
parallel compute (islands, population) help? Each cell's final numbers set against its
configured knobs, read from its campaign.json rather than its overrides, so a knob the grid
does not vary still places the cell. Cells that share a point (seeds of one setting) are
averaged there, and say how many they are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evo.analysis.metrics import all_meaningful

KNOBS = ("generations", "islands", "population", "offspring")
"""The [search] knobs a cell is placed by: generations is sequential, the rest parallel."""
PARALLEL = ("islands", "population")
METRICS = ("exec_accuracy", "found_accuracy", "speedup_geomean", "found_speedup_geomean")


def knob(cell: dict[str, Any], name: str) -> int | None:
    """Returns a cell's configured `name` ([search]), its generations reached if unknown."""
    value = cell["search"].get(name)
    if value is None and name == "generations":
        return cell["generations"] - 1  # generation 0 holds the seeds
    return None if value is None else int(value)


def _mean(values: list[float | None], geometric: bool = False) -> float | None:
    present = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if geometric:
        present = present[present > 0]
    if not len(present):
        return None
    return float(np.exp(np.log(present).mean())) if geometric else float(present.mean())


def at_points(cells: list[dict[str, Any]], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Returns one point per distinct value of the knobs `names`, sorted: the cells there,
    their mean accuracies, the geomean of their speedup geomeans, their mean spend and
    whether their speedups were all timed meaningfully."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for cell in cells:
        groups.setdefault(tuple(knob(cell, n) for n in names), []).append(cell)
    points = []
    for key in sorted(groups, key=lambda k: tuple(-1 if v is None else v for v in k)):
        members = groups[key]
        point = dict(zip(names, key))
        point["cells"] = [c["cell"] for c in members]
        for metric in METRICS:
            point[metric] = _mean([c["suite"][metric] for c in members],
                                  geometric=metric.endswith("speedup_geomean"))
        point["spend"] = {m: _mean([c["spend"][m] for c in members]) for m in members[0]["spend"]}
        point["timing_meaningful"] = all_meaningful(c["suite"]["timing_meaningful"]
                                                    for c in members)
        points.append(point)
    return points


def grid(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Returns the generations x islands grid: its row and column values and its points."""
    points = at_points(cells, ("generations", "islands"))
    return {"generations": sorted({p["generations"] for p in points if p["generations"] is not None}),
            "islands": sorted({p["islands"] for p in points if p["islands"] is not None}),
            "points": points}


def varied(cells: list[dict[str, Any]]) -> list[str]:
    """Returns the parallel knobs whose value differs between cells (islands if none)."""
    return [n for n in PARALLEL if len({knob(c, n) for c in cells}) > 1] or ["islands"]
