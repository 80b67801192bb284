"""Figures of a sweep folder (PNG, under SWEEP/figures): the scaling question drawn.

Accuracy and best speedup against generations (sequential), against islands and population
(parallel: one line per generations setting), against each unit of compute, and the
generations x islands grid. Accuracy leaves the seeds out when some task starts from a
correct seed (else every curve is flat at 1.0 from generation 0); every speedup is drawn over
the seeds' noise band, and under the interpreter says it is not meaningful.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator, PercentFormatter

from evo.analysis import plots, scaling
from evo.analysis.plots import METRIC_LABELS, noise_band, plt, timing_caveat


def accuracy_metric(curves: dict[str, pd.DataFrame]) -> str:
    """Returns "found_accuracy" when a seed solves some task at generation 0, else
    "exec_accuracy"."""
    seeded = any(float(t["exec_accuracy"].iloc[0]) > float(t["found_accuracy"].iloc[0])
                 for t in curves.values())
    return "found_accuracy" if seeded else "exec_accuracy"


def _panels(count: int) -> tuple[plt.Figure, list[plt.Axes]]:
    figure, axes = plt.subplots(1, count, figsize=(5 * count, 3.8), squeeze=False)
    return figure, list(axes[0])


def _finish(axes: plt.Axes, metric: str, band, meaningful: bool, lines: int) -> None:
    axes.set_ylabel(METRIC_LABELS[metric])
    if metric.startswith("speedup"):
        noise_band(axes, band)
        timing_caveat(axes, meaningful)
    else:
        axes.set_ylim(-0.02, 1.02)
    if lines <= 12:
        axes.legend(fontsize=7)


def vs_generation(curves: dict[str, pd.DataFrame], accuracy: str, band, meaningful: bool):
    """Sequential scaling: accuracy and best speedup against generation, a line per cell."""
    figure, panels = _panels(2)
    for axes, metric in zip(panels, (accuracy, "speedup_geomean")):
        plots.draw_curves(axes, {cell: t[metric] for cell, t in curves.items()})
        axes.set(xlabel="generation", title=f"{METRIC_LABELS[metric]} vs generation")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        _finish(axes, metric, band, meaningful, len(curves))
    return figure


def vs_parallel(cells: list[dict[str, Any]], accuracy: str, band, meaningful: bool):
    """Parallel scaling: final accuracy and best speedup against each parallel knob the
    sweep varies, one line per generations setting (cells sharing a point averaged)."""
    knobs = scaling.varied(cells)
    figure, panels = _panels(2 * len(knobs))
    for index, knob in enumerate(knobs):
        points = scaling.at_points(cells, ("generations", knob))
        by_generations = sorted({p["generations"] for p in points}, key=lambda g: g or 0)
        for offset, metric in enumerate((accuracy, "speedup_geomean")):
            axes = panels[2 * index + offset]
            plots.draw_curves(axes, {f"{g} generations": pd.Series(
                [p[metric] if p[metric] is not None else np.nan for p in points
                 if p["generations"] == g],
                index=[p[knob] for p in points if p["generations"] == g], dtype=float)
                for g in by_generations})
            axes.set(xlabel=knob, title=f"{METRIC_LABELS[metric]} vs {knob}")
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            _finish(axes, metric, band, meaningful, len(by_generations))
    return figure


def grid(found: dict[str, Any], accuracy: str, meaningful: bool):
    """The generations x islands grid: each point's accuracy and best speedup written in,
    shaded by speedup where timing means something, else by accuracy."""
    rows, columns = found["generations"], found["islands"]
    shade = "speedup_geomean" if meaningful else accuracy
    values = np.full((len(rows), len(columns)), np.nan)
    figure, axes = plt.subplots(figsize=(1.8 * len(columns) + 2.5, 1.0 * len(rows) + 1.8))
    for point in found["points"]:
        if point["generations"] not in rows or point["islands"] not in columns:
            continue
        r, c = rows.index(point["generations"]), columns.index(point["islands"])
        values[r, c] = np.nan if point[shade] is None else point[shade]
        speed = "-" if point["speedup_geomean"] is None else f"{point['speedup_geomean']:.2f}x"
        accuracy_text = "-" if point[accuracy] is None else f"{point[accuracy]:.0%}"
        axes.text(c, r, f"{accuracy_text}\n{speed}{'' if meaningful else '*'}",
                  ha="center", va="center", fontsize=9)
    low, high = _shade_range(values, shade)
    image = axes.imshow(values, cmap="Blues", aspect="auto", alpha=0.7, vmin=low, vmax=high)
    bar = figure.colorbar(image, ax=axes, label=METRIC_LABELS[shade])
    if shade != "speedup_geomean":
        bar.ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xticks(range(len(columns)), [str(c) for c in columns])
    axes.set_yticks(range(len(rows)), [str(r) for r in rows])
    axes.set(xlabel="islands", ylabel="generations",
             title=f"{METRIC_LABELS[accuracy]} / best speedup")
    if not meaningful:
        axes.set_title(axes.get_title() + "\n(*: interpreter timing, not meaningful)", fontsize=9)
    return figure


def _shade_range(values: np.ndarray, shade: str) -> tuple[float, float]:
    """Returns the colour scale of the grid: an accuracy's whole range, 0-100%, and a
    speedup's values with 1.0x among them; never a span around one value that every cell
    shares (matplotlib's 0.90-1.10 when every cell reads 100%)."""
    if shade != "speedup_geomean":
        return 0.0, 1.0
    finite = values[np.isfinite(values)]
    low = min([1.0, *finite.tolist()])
    high = max([1.0, *finite.tolist()])
    return low, high if high > low else low + 1.0


def draw_all(cells: list[dict[str, Any]], curves: dict[str, pd.DataFrame], found: dict[str, Any],
             backends: Iterable[str], folder: Path) -> list[Path]:
    """Draws and saves every sweep figure; returns their paths."""
    accuracy = accuracy_metric(curves)
    meaningful = found["timing_meaningful"] is not False
    band = found["noise_band"]
    drawn = {
        "sweep_accuracy_vs_spend": plots.against_spend(curves, accuracy, backends),
        "sweep_speedup_vs_spend": plots.against_spend(curves, "speedup_geomean", backends,
                                                      band, meaningful),
        "sweep_vs_generation": vs_generation(curves, accuracy, band, meaningful),
        "sweep_vs_parallel": vs_parallel(cells, accuracy, band, meaningful),
        "sweep_grid": grid(found["grid"], accuracy, meaningful),
    }
    return [plots.save(figure, folder / f"{name}.png") for name, figure in drawn.items()]
