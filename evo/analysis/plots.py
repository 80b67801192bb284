"""Figures of a campaign or a sweep, as PNG files (matplotlib's Agg backend, no display).

Each function draws one figure from tables evo.analysis.metrics computed, saves it and returns its
path: the report prints the same numbers it plots.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

SPEND_LABELS = {"evaluations": "evaluations", "tokens": "LLM tokens", "usd": "USD",
                "gpu_s": "GPU-seconds"}


def _save(figure: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _timing_caveat(axes: plt.Axes, meaningful: bool) -> None:
    if not meaningful:
        axes.set_title(axes.get_title() + "\n(interpreter timing: speedups not meaningful)",
                       fontsize=9)


def _empty(axes: plt.Axes, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes)


def accuracy_vs_generation(by_generation: pd.DataFrame, path: Path) -> Path:
    """Sequential scaling: call / execution accuracy and pass@1 against generations."""
    figure, axes = plt.subplots(figsize=(6, 4))
    for column, label in (("call_accuracy", "call accuracy"), ("exec_accuracy", "execution accuracy"),
                          ("pass_at_1", "pass@1 (mean over runs)")):
        axes.plot(by_generation.index, by_generation[column].astype(float), marker="o", label=label)
    axes.set(xlabel="generation", ylabel="fraction of tasks", ylim=(-0.02, 1.02),
             title="Accuracy vs generation (cumulative)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower right")  # rising curves leave that corner free
    return _save(figure, path)


def pass_at_k(by_runs: pd.DataFrame, task_curves: dict[str, dict[int, float]], path: Path) -> Path:
    """Parallel scaling: suite pass@k and call pass@k against k, tasks in thin grey."""
    figure, axes = plt.subplots(figsize=(6, 4))
    for curve in task_curves.values():
        axes.plot(list(curve), list(curve.values()), color="0.8", linewidth=0.8)
    axes.plot(by_runs.index, by_runs["call_pass_at_k"], marker="s", label="call pass@k")
    axes.plot(by_runs.index, by_runs["pass_at_k"], marker="o", label="pass@k (correct)")
    axes.set(xlabel="k (independent runs)", ylabel="probability", ylim=(-0.02, 1.02),
             title="pass@k vs k (grey: single tasks)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower right")  # rising curves leave that corner free
    return _save(figure, path)


def best_speedup_by_generation(best: pd.DataFrame, meaningful: bool, path: Path) -> Path:
    """Best correct speedup found so far, per task, against generations."""
    figure, axes = plt.subplots(figsize=(6, 4))
    drawn = best.dropna(axis="columns", how="all")
    for task in drawn.columns:
        axes.plot(drawn.index, drawn[task], marker="o", label=task)
    if drawn.empty:
        _empty(axes, "no correct timed candidate yet")
    else:
        axes.axhline(1.0, color="0.5", linestyle="--", linewidth=0.8)
        if len(drawn.columns) <= 12:
            axes.legend(fontsize=8)
    axes.set(xlabel="generation", ylabel="best speedup vs baseline",
             title="Best speedup per generation per task")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    _timing_caveat(axes, meaningful)
    return _save(figure, path)


def speedup_distribution(speedups: pd.Series, meaningful: bool, path: Path) -> Path:
    """Histogram of the speedups of every correct timed candidate (log-spaced bins)."""
    figure, axes = plt.subplots(figsize=(6, 4))
    positive = speedups[speedups > 0].astype(float)
    if positive.empty:
        _empty(axes, "no correct timed candidate yet")
    else:
        low, high = positive.min(), positive.max()
        bins = np.geomspace(low / 1.1, high * 1.1, 30) if high > low else 10
        axes.hist(positive, bins=bins, color="tab:blue", edgecolor="white")
        if high > low:
            axes.set_xscale("log")
        axes.axvline(1.0, color="0.3", linestyle="--", linewidth=0.8)
    axes.set(xlabel="speedup vs baseline", ylabel="correct candidates",
             title="Speedup distribution")
    _timing_caveat(axes, meaningful)
    return _save(figure, path)


def accuracy_vs_spend(curves: dict[str, pd.DataFrame], path: Path,
                      metric: str = "exec_accuracy") -> Path:
    """Accuracy against cumulative compute, one panel per unit spent, one line per campaign.

    `curves` maps a label to a by-generation table; units nobody spent (tokens in offline
    mode) get no panel.
    """
    measures = [m for m in SPEND_LABELS
                if any(float(table[m].max()) > 0 for table in curves.values())]
    figure, panels = plt.subplots(1, len(measures), figsize=(4 * len(measures), 3.8), squeeze=False)
    for axes, measure in zip(panels[0], measures):
        for label, table in curves.items():
            axes.plot(table[measure], table[metric].astype(float), marker="o", label=label)
        axes.set(xlabel=SPEND_LABELS[measure], ylabel=metric.replace("_", " "), ylim=(-0.02, 1.02))
    panels[0][0].set_title("Accuracy vs spend")
    if 1 < len(curves) <= 12:
        panels[0][-1].legend(fontsize=7)
    return _save(figure, path)


def versus_torch(cases: list[dict], modes: tuple[str, ...], path: Path) -> Path:
    """The best kernel's speedup over the baseline and each torch mode, one group per case.

    Bars grow from 1 on a log scale, so 2x faster and 2x slower are equally long, right and
    left of the line where the best and the other are even.
    """
    keys = ("baseline",) + tuple(modes)
    labels = [f"{c['task']} {c['case']}" for c in cases]
    figure, axes = plt.subplots(figsize=(9, 1.5 + 0.35 * len(cases)))
    height = 0.8 / len(keys)
    for offset, key in enumerate(keys):
        values = np.array([c["speedup"][key] or np.nan for c in cases], dtype=float)
        axes.barh(np.arange(len(cases)) + offset * height, values - 1.0, left=1.0,
                  height=height, label=key)
    axes.set_yticks(np.arange(len(cases)) + 0.4 - height / 2, labels, fontsize=7)
    axes.invert_yaxis()
    axes.set_xscale("log")
    label = FuncFormatter(lambda value, _: f"{value:g}x")
    axes.xaxis.set_major_formatter(label)
    axes.xaxis.set_minor_formatter(label)
    axes.tick_params(axis="x", which="minor", labelsize=7)
    axes.axvline(1.0, color="0.3", linestyle="--", linewidth=0.8)
    axes.set(xlabel="speedup of the best kernel (other latency / best latency)",
             title="Best kernel vs baseline and torch, per case")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(figure, path)
