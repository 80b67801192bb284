"""Figures of a sweep folder (PNG, under SWEEP/figures): the scaling question drawn.

Accuracy and best speedup against generations (sequential), against islands and population
(parallel: one line per generations setting), against each unit of compute, and the
generations x islands grid. Accuracy and speedup leave the seeds out when some task starts
from a correct seed (else every accuracy curve is flat at 1.0 from generation 0); then an
offline cell's accuracy says why it jumps at generation 1. Every speedup is drawn over the
seeds' noise band with the note that a best rises with compute by itself
(noise.rising_best_note), and under the interpreter says it is not meaningful.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator, PercentFormatter

from evo.analysis import noise, plots, scaling
from evo.analysis.plots import METRIC_LABELS, noise_band, plt, timing_caveat

OFFLINE_SEEDED = ("seeds left out; an offline cell's children keep a correct seed's code and "
                  "change only its launch values, so they are almost always correct: its jump "
                  "to 100% at generation 1 is that, not the search finding kernels")
"""What an offline, seeded sweep's accuracy against generations needs said beside it."""


def shown_metrics(curves: dict[str, pd.DataFrame]) -> tuple[str, str]:
    """Returns the accuracy and speedup a sweep shows: ("found_accuracy",
    "found_speedup_geomean") when a seed solves some task at generation 0, seeds left out
    of both alike; else ("exec_accuracy", "speedup_geomean")."""
    seeded = any(float(t["exec_accuracy"].iloc[0]) > float(t["found_accuracy"].iloc[0])
                 for t in curves.values())
    return (("found_accuracy", "found_speedup_geomean") if seeded
            else ("exec_accuracy", "speedup_geomean"))


def accuracy_caption(cells: list[dict[str, Any]], accuracy: str) -> str:
    """Returns OFFLINE_SEEDED when seeds are left out and some cell ran offline, else ""."""
    offline = any(cell.get("mode") == "offline" for cell in cells)
    return OFFLINE_SEEDED if accuracy == "found_accuracy" and offline else ""


def _panels(count: int) -> tuple[plt.Figure, list[plt.Axes]]:
    figure, axes = plt.subplots(1, count, figsize=(5 * count, 3.8), squeeze=False)
    return figure, list(axes[0])


def _finish(axes: plt.Axes, metric: str, band, meaningful: bool, lines: int) -> None:
    axes.set_ylabel(METRIC_LABELS[metric])
    if metric.endswith("speedup_geomean"):
        noise_band(axes, band)
        timing_caveat(axes, meaningful)
    else:
        axes.set_ylim(-0.02, 1.02)
    if lines <= 12:
        axes.legend(fontsize=7)


def vs_generation(curves: dict[str, pd.DataFrame], shown: tuple[str, str], band,
                  meaningful: bool, caption: str):
    """Sequential scaling: accuracy and best speedup against generation, a line per cell,
    captioned with `caption` (accuracy_caption) and the rising-best note."""
    figure, panels = _panels(2)
    last = max(int(t.index.max()) for t in curves.values())
    for axes, metric in zip(panels, shown):
        plots.draw_curves(axes, {cell: t[metric] for cell, t in curves.items()})
        axes.set(xlabel="generation", title=f"{METRIC_LABELS[metric]} vs generation",
                 xlim=(-0.2, last + 0.2))  # every generation, though the seeds' has no speedup
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        _finish(axes, metric, band, meaningful, len(curves))
    plots.caption(figure, [f"accuracy: {caption}" if caption else "",
                           f"speedup: {noise.rising_best_note(band)}"])
    return figure


def vs_parallel(cells: list[dict[str, Any]], shown: tuple[str, str], band, meaningful: bool):
    """Parallel scaling: final accuracy and best speedup against each parallel knob the
    sweep varies, one line per generations setting (cells sharing a point averaged)."""
    knobs = scaling.varied(cells)
    figure, panels = _panels(2 * len(knobs))
    for index, knob in enumerate(knobs):
        points = scaling.at_points(cells, ("generations", knob))
        by_generations = sorted({p["generations"] for p in points}, key=lambda g: g or 0)
        for offset, metric in enumerate(shown):
            axes = panels[2 * index + offset]
            plots.draw_curves(axes, {f"{g} generations": pd.Series(
                [p[metric] if p[metric] is not None else np.nan for p in points
                 if p["generations"] == g],
                index=[p[knob] for p in points if p["generations"] == g], dtype=float)
                for g in by_generations})
            axes.set(xlabel=knob, title=f"{METRIC_LABELS[metric]} vs {knob}")
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            _finish(axes, metric, band, meaningful, len(by_generations))
    plots.caption(figure, [f"speedup: {noise.rising_best_note(band)}"])
    return figure


def grid(found: dict[str, Any], shown: tuple[str, str], meaningful: bool):
    """The generations x islands grid: each point's accuracy and best speedup written in,
    shaded by speedup where timing means something, else by accuracy."""
    rows, columns = found["generations"], found["islands"]
    accuracy, speedup = shown
    shade = speedup if meaningful else accuracy
    values = np.full((len(rows), len(columns)), np.nan)
    figure, axes = plt.subplots(figsize=(1.8 * len(columns) + 2.5, 1.0 * len(rows) + 1.8))
    for point in found["points"]:
        if point["generations"] not in rows or point["islands"] not in columns:
            continue
        r, c = rows.index(point["generations"]), columns.index(point["islands"])
        values[r, c] = np.nan if point[shade] is None else point[shade]
        speed = "-" if point[speedup] is None else f"{point[speedup]:.2f}x"
        accuracy_text = "-" if point[accuracy] is None else f"{point[accuracy]:.0%}"
        axes.text(c, r, f"{accuracy_text}\n{speed}{'' if meaningful else '*'}",
                  ha="center", va="center", fontsize=9)
    low, high = _shade_range(values, shade == speedup)
    image = axes.imshow(values, cmap="Blues", aspect="auto", alpha=0.7, vmin=low, vmax=high)
    bar = figure.colorbar(image, ax=axes, label=METRIC_LABELS[shade])
    if shade != speedup:
        bar.ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xticks(range(len(columns)), [str(c) for c in columns])
    axes.set_yticks(range(len(rows)), [str(r) for r in rows])
    axes.set(xlabel="islands", ylabel="generations",
             title=f"{METRIC_LABELS[accuracy]} / best speedup")
    if not meaningful:
        axes.set_title(axes.get_title() + "\n(*: interpreter timing, not meaningful)", fontsize=9)
    return figure


def _shade_range(values: np.ndarray, speedup: bool) -> tuple[float, float]:
    """Returns the colour scale of the grid: an accuracy's whole range, 0-100%, and a
    speedup's values with 1.0x among them; never a span around one value that every cell
    shares (matplotlib's 0.90-1.10 when every cell reads 100%)."""
    if not speedup:
        return 0.0, 1.0
    finite = values[np.isfinite(values)]
    low = min([1.0, *finite.tolist()])
    high = max([1.0, *finite.tolist()])
    return low, high if high > low else low + 1.0


def figures(cells: list[dict[str, Any]], curves: dict[str, pd.DataFrame], found: dict[str, Any],
            backends: Iterable[str]) -> dict[str, plt.Figure]:
    """Returns every sweep figure by file name (without .png), drawn, not saved."""
    shown = shown_metrics(curves)
    meaningful = found["timing_meaningful"] is not False
    band = found["noise_band"]
    speed = plots.against_spend(curves, shown[1], backends, band, meaningful)
    plots.caption(speed, [noise.rising_best_note(band)])
    return {
        "sweep_accuracy_vs_spend": plots.against_spend(curves, shown[0], backends),
        "sweep_speedup_vs_spend": speed,
        "sweep_vs_generation": vs_generation(curves, shown, band, meaningful,
                                             accuracy_caption(cells, shown[0])),
        "sweep_vs_parallel": vs_parallel(cells, shown, band, meaningful),
        "sweep_grid": grid(found["grid"], shown, meaningful),
    }


def draw_all(cells: list[dict[str, Any]], curves: dict[str, pd.DataFrame], found: dict[str, Any],
             backends: Iterable[str], folder: Path) -> list[Path]:
    """Draws and saves every sweep figure; returns their paths."""
    return [plots.save(figure, folder / f"{name}.png")
            for name, figure in figures(cells, curves, found, backends).items()]
