"""Curves that lie exactly on one another, named in the legend: a hidden line is not a missing one.

Two tasks that both reach 1.0 at every generation, or call and execution accuracy when every
candidate that runs is correct, draw the same line twice, and the later one hides the earlier.
Both the PNG figures (evo.analysis.plots) and the HTML page's charts (evo.analysis.svg_charts)
give each curve its own marker and dash, and say in the legend which curve another one covers.
"""

from __future__ import annotations

import math
from typing import Sequence


def legend_labels(curves: Sequence[tuple[str, Sequence[float], Sequence[float]]]) -> list[str]:
    """Returns each (name, x, y) curve's legend label: its name, and "(same as NAME)" when an
    earlier curve has exactly its points (a gap, NaN, matches a gap)."""
    labels, seen = [], []
    for name, x, y in curves:
        points = _points(x, y)
        twin = next((other for other, other_points in seen if other_points == points), None)
        labels.append(name if twin is None else f"{name} (same as {twin})")
        seen.append((name, points))
    return labels


def _points(x: Sequence[float], y: Sequence[float]) -> tuple:
    return tuple((_value(a), _value(b)) for a, b in zip(x, y))


def _value(value: float) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number
