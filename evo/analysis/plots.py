"""Figures of a campaign or a sweep, as PNG files (matplotlib's Agg backend, no display).

Each drawing function builds one figure from tables evo.analysis.metrics computed and returns
it; `save` writes it: the report prints the same numbers it plots. Every curve of a figure has
its own marker and dash, and the legend names a curve another one covers (evo.analysis.overlaps),
so lines that coincide stay told apart. Log axes read 0.5, 1, 2, never 5×10⁻¹.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from evo.analysis.noise import INTERPRETER_CAVEAT  # noqa: E402
from evo.analysis.overlaps import legend_labels  # noqa: E402
from evo.progress import time_name  # noqa: E402

def seconds_name(backends: Iterable[str]) -> str:
    """Returns what fitness seconds spent on `backends` are called: "GPU", "eval" on the
    interpreter (evo.progress.time_name), "GPU/eval" for both; "GPU" when none is known."""
    return "/".join(sorted({time_name(backend) for backend in backends}) or ["GPU"])


def spend_labels(backends: Iterable[str] = ()) -> dict[str, str]:
    """Returns the names of the units of compute (metrics.SPEND_MEASURES), fitness seconds
    named for `backends` ("eval-seconds" on the interpreter)."""
    return {"evaluations": "evaluations", "tokens": "LLM tokens", "usd": "USD",
            "gpu_s": f"{seconds_name(backends)}-seconds"}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINE_STYLES = ("-", "--", ":", "-.")
LOG_SUBS = ((2.0, (1.0,)), (1.0, (1.0, 2.0, 5.0)), (0.6, (1.0, 2.0, 3.0, 5.0)),
            (0.3, (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)),
            (0.0, (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)))
"""(decades spanned at least, multiples of each power of ten that get a labelled tick): the
wider a log axis, the fewer labels per decade."""
RUNS_LABELS = {True: "k (islands per task; no migration: independent runs)",
               False: "k (islands per task; they exchange migrants: not independent runs)",
               None: "k (islands per task)"}
"""The pass@k figure's x axis, by whether a campaign's islands are independent runs
(`Results.independent_runs`): islands that migrate share their best, so they are not."""


def save(figure: plt.Figure, path: Path) -> Path:
    """Writes `figure` to `path` (a PNG), closes it and returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def timing_caveat(axes: plt.Axes, meaningful: bool) -> None:
    if not meaningful:
        axes.set_title(f"{axes.get_title()}\n({INTERPRETER_CAVEAT})", fontsize=9)


def _empty(axes: plt.Axes, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes)


def draw_curves(axes: plt.Axes, curves: dict[str, pd.Series]) -> None:
    """Draws each curve (y indexed by x) with its own hollow marker and dash; its label
    names an earlier curve it lies on."""
    labels = legend_labels([(name, c.index, c.astype(float)) for name, c in curves.items()])
    for index, (curve, label) in enumerate(zip(curves.values(), labels)):
        axes.plot(curve.index, curve.astype(float), label=label, fillstyle="none",
                  marker=MARKERS[index % len(MARKERS)],
                  linestyle=LINE_STYLES[index % len(LINE_STYLES)])


def _plain_log_axis(axis, low: float, high: float, suffix: str = "") -> None:
    """Labels a log axis with plain numbers (0.5, 1, 2), at `LOG_SUBS` times powers of ten
    for the decades it spans; minor ticks stay unlabelled."""
    decades = math.log10(high / low)
    subs = next(subs for least, subs in LOG_SUBS if decades >= least)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}{suffix}"))
    axis.set_minor_formatter(NullFormatter())


def accuracy_vs_generation(by_generation: pd.DataFrame) -> plt.Figure:
    """Sequential scaling: call / execution accuracy and pass@1 against generations."""
    figure, axes = plt.subplots(figsize=(6, 4))
    draw_curves(axes, {"call accuracy": by_generation["call_accuracy"],
                   "execution accuracy": by_generation["exec_accuracy"],
                   "pass@1 (mean over islands)": by_generation["pass_at_1"]})
    axes.set(xlabel="generation", ylabel="fraction of tasks", ylim=(-0.02, 1.02),
             title="Accuracy vs generation (cumulative)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower right", fontsize=8)  # rising curves leave that corner free
    return figure


def pass_at_k(by_runs: pd.DataFrame, task_curves: dict[str, dict[int, float]],
              independent: bool | None) -> plt.Figure:
    """Parallel scaling: suite pass@k and call pass@k against k islands, and, when there are
    several tasks, each task's pass@k as a thin grey line (one legend entry for them all)."""
    figure, axes = plt.subplots(figsize=(6, 4))
    if len(task_curves) > 1:
        distinct = len({tuple(curve.items()) for curve in task_curves.values()})
        label = f"single tasks' pass@k ({len(task_curves)}" + (
            f"; {distinct} distinct)" if distinct < len(task_curves) else ")")
        for index, curve in enumerate(task_curves.values()):
            axes.plot(list(curve), list(curve.values()), color="0.55", linewidth=0.8,
                      marker=".", zorder=3, label=label if index == 0 else "_nolegend_")
    draw_curves(axes, {"call pass@k": by_runs["call_pass_at_k"],
                   "pass@k (correct)": by_runs["pass_at_k"]})
    axes.set(xlabel=RUNS_LABELS[independent], ylabel="probability", ylim=(-0.02, 1.02),
             title="pass@k vs k (mean over tasks)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower right", fontsize=8)  # rising curves leave that corner free
    return figure


def best_speedup_by_generation(best: pd.DataFrame, meaningful: bool,
                               band: tuple[float, float] | None = None) -> plt.Figure:
    """Best correct speedup found so far, per task, against generations (from generation 0),
    over the seeds' noise `band` (the suite's, evo.analysis.noise)."""
    figure, axes = plt.subplots(figsize=(6, 4))
    drawn = best.dropna(axis="columns", how="all")
    draw_curves(axes, {task: drawn[task] for task in drawn.columns})
    if drawn.empty:
        _empty(axes, "no correct timed candidate yet")
    else:
        noise_band(axes, band)
        if len(drawn.columns) <= 12:
            axes.legend(fontsize=8)
    axes.set(xlabel="generation", ylabel="best speedup vs baseline",
             title="Best speedup per generation per task")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    timing_caveat(axes, meaningful)
    return figure


def speedup_distribution(speedups: pd.Series, meaningful: bool) -> plt.Figure:
    """Histogram of the speedups of every correct timed candidate (log-spaced bins once
    they span more than a factor of two)."""
    figure, axes = plt.subplots(figsize=(6, 4))
    positive = speedups[speedups > 0].astype(float)
    if positive.empty:
        _empty(axes, "no correct timed candidate yet")
    else:
        low, high = positive.min() / 1.1, positive.max() * 1.1
        wide = high / low > 2 * 1.1 ** 2
        bins = np.geomspace(low, high, 30) if wide else np.linspace(low, high, 11)
        axes.hist(positive, bins=bins, color="tab:blue", edgecolor="white")
        if wide:
            axes.set_xscale("log")
            _plain_log_axis(axes.xaxis, low, high)
        axes.axvline(1.0, color="0.3", linestyle="--", linewidth=0.8)
    axes.set(xlabel="speedup vs baseline", ylabel="correct candidates",
             title="Speedup distribution")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    timing_caveat(axes, meaningful)
    return figure


def against_spend(curves: dict[str, pd.DataFrame], metric: str = "exec_accuracy",
                  backends: Iterable[str] = (), band: tuple[float, float] | None = None,
                  meaningful: bool = True) -> plt.Figure:
    """`metric` (an accuracy, or the best speedup geomean) against cumulative compute, one
    panel per unit spent, one line per campaign; a speedup gets the seeds' noise `band`.

    `curves` maps a label to a by-generation table; units nobody spent (tokens in offline
    mode) get no panel. `backends`, those the rows were scored on, name the fitness seconds.
    """
    labels = spend_labels(backends)
    measures = [m for m in labels
                if any(float(table[m].max()) > 0 for table in curves.values())]
    figure, panels = plt.subplots(1, len(measures), figsize=(4 * len(measures), 3.8), squeeze=False)
    speed = metric.endswith("speedup_geomean")
    for axes, measure in zip(panels[0], measures):
        draw_curves(axes, {label: pd.Series(table[metric].to_numpy(), index=table[measure].to_numpy())
                       for label, table in curves.items()})
        axes.set(xlabel=labels[measure], ylabel=METRIC_LABELS[metric])
        if speed:
            noise_band(axes, band)
        else:
            axes.set_ylim(-0.02, 1.02)
    panels[0][0].set_title(f"{'Best speedup' if speed else 'Accuracy'} vs spend")
    if speed:
        timing_caveat(panels[0][0], meaningful)
    if 1 < len(curves) <= 12:
        panels[0][-1].legend(fontsize=7)
    return figure


METRIC_LABELS = {"exec_accuracy": "exec accuracy",
                 "found_accuracy": "exec accuracy, seeds left out",
                 "speedup_geomean": "best speedup (geomean over tasks)",
                 "found_speedup_geomean": "best speedup, seeds left out"}


def caption(figure: plt.Figure, lines: list[str]) -> None:
    """Writes `lines` (empty ones left out) above a figure's panels, wrapped to its width."""
    width = int(figure.get_figwidth() * 15)  # characters of 8-point text per inch
    text = "\n".join(textwrap.fill(line, width, break_on_hyphens=False) for line in lines if line)
    if text:
        figure.suptitle(text, fontsize=8, x=0.01, ha="left")


def noise_band(axes: plt.Axes, band: tuple[float, float] | None) -> None:
    """Shades the speedups a seed read against its own baseline (evo.analysis.noise): a
    value inside is timing noise."""
    axes.axhline(1.0, color="0.5", linestyle="--", linewidth=0.8)
    if band is not None:
        axes.axhspan(band[0], band[1], color="0.6", alpha=0.25, zorder=0,
                     label=f"seed's own spread {band[0]:.2f}x-{band[1]:.2f}x (noise)")


def versus_torch(cases: list[dict], modes: tuple[str, ...]) -> plt.Figure:
    """The best kernel's speedup over the baseline and each torch mode, one group per case.

    Bars grow from 1 on a log scale, so 2x faster and 2x slower are equally long, right and
    left of the line where the best and the other are even.
    """
    keys = ("baseline",) + tuple(modes)
    labels = [f"{c['task']} {c['case']}" for c in cases]
    figure, axes = plt.subplots(figsize=(9, 1.5 + 0.35 * len(cases)))
    height = 0.8 / len(keys)
    every = []
    for offset, key in enumerate(keys):
        values = np.array([c["speedup"][key] or np.nan for c in cases], dtype=float)
        every.extend(values[np.isfinite(values) & (values > 0)])
        axes.barh(np.arange(len(cases)) + offset * height, values - 1.0, left=1.0,
                  height=height, label=key)
    axes.set_yticks(np.arange(len(cases)) + 0.4 - height / 2, labels, fontsize=7)
    axes.invert_yaxis()
    axes.set_xscale("log")
    _plain_log_axis(axes.xaxis, min(every + [1.0]), max(every + [1.0]) * 1.01, suffix="x")
    axes.axvline(1.0, color="0.3", linestyle="--", linewidth=0.8)
    axes.set(xlabel="speedup of the best kernel (other latency / best latency)",
             title="Best kernel vs baseline and torch, per case")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure
