"""GEAK's figures as PNG: best speedup against generations (sequential scaling) and against k
independent runs (parallel scaling), one pair of curves per search campaign, and each model's
execution accuracy by difficulty level (direct prompting). They draw the frames
evo.analysis.geak_tables computes (level "all" for the curves), so a figure shows the numbers
its markdown prints; speedups timed under the interpreter carry the caveat in the title.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import plots
from evo.analysis.plots import MaxNLocator, plt

SCALING = {"sequential": ("generation", "speedup_vs_generation.png",
                          "generation (island 0, cumulative)", "Speedup vs generation"),
           "parallel": ("k", "speedup_vs_k.png", "k (islands 0..k-1: independent runs)",
                        "Speedup vs parallel runs")}
"""Table -> (its key, file name, x label, title)."""
DIRECT_FIGURE = "exec_acc_by_difficulty.png"


def speedup_curves(frames: dict[str, pd.DataFrame], key: str, xlabel: str,
                   title: str) -> plt.Figure:
    """Draws GEAK's mean and the geomean speedup of each campaign's frame (one level's rows)
    against its `key` column, with the reference's 1.0 dashed."""
    figure, axes = plt.subplots(figsize=(6, 4))
    curves = {}
    for name, frame in frames.items():
        indexed = frame.set_index(key)
        curves[f"{name}: GEAK mean"] = indexed["speedup_mean"]
        curves[f"{name}: geomean"] = indexed["speedup_geomean"]
    plots.draw_curves(axes, curves)
    axes.axhline(1.0, color="0.3", linestyle="--", linewidth=0.8)
    axes.set(xlabel=xlabel, ylabel="best speedup over the reference\n(tasks solved and timed)",
             title=title)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize=8)
    plots.timing_caveat(axes, all(f["timing_meaningful"].all() for f in frames.values()))
    return figure


def exec_by_difficulty(direct: pd.DataFrame) -> plt.Figure:
    """Draws one bar per model at each difficulty level (then all): its execution accuracy."""
    table = direct.pivot(index="level", columns="model", values="exec_accuracy")
    table = table.reindex(index=list(dict.fromkeys(direct["level"])),
                          columns=list(dict.fromkeys(direct["model"])))
    figure, axes = plt.subplots(figsize=(6, 4))
    width = 0.8 / len(table.columns)
    for index, model in enumerate(table.columns):
        offsets = [x - 0.4 + width * (index + 0.5) for x in range(len(table.index))]
        axes.bar(offsets, 100 * table[model].fillna(0.0), width=width, label=model)
    axes.set_xticks(range(len(table.index)), [str(level) for level in table.index])
    axes.set(xlabel="difficulty level", ylabel="exec acc (% of tasks)", ylim=(0, 125),
             title="Direct prompting: execution accuracy by difficulty")
    axes.legend(fontsize=8, loc="upper center", ncol=min(len(table.columns), 4))  # above 100%
    return figure


def write(report: dict[str, Any], out: Path, whole: str) -> list[Path]:
    """Writes the figures a report has data for to `out`; `whole` names the all-tasks level."""
    written = []
    for table, (key, name, xlabel, title) in SCALING.items():
        frames = {campaign: search[table][search[table]["level"] == whole]
                  for campaign, search in report["search"].items()}
        if frames:
            written.append(plots.save(speedup_curves(frames, key, xlabel, title), out / name))
    if report["direct"] is not None:
        written.append(plots.save(exec_by_difficulty(report["direct"]), out / DIRECT_FIGURE))
    return written
