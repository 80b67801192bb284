"""The page of a sweep folder: the scaling question drawn, each task's best, the grid of
generations x islands and the cells at equal compute (several budgets).

The same numbers as `evo report SWEEP` (evo.analysis.compare), drawn as SVG and read through
evo.analysis.snapshot, so a sweep still running shows its finished and running cells and
names the ones with nothing to show yet. Every speedup is drawn over the seeds' noise band
and, under the interpreter, said to be not meaningful (its tables leave such speedups out:
evo.analysis.speedup_cells). One page per sweep, not per
cell: a cell's lineages are on its own page (`evo report SWEEP/CELL --html`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import best, compare, noise, scaling, snapshot, speedup_cells, sweep_plots
from evo.analysis import sweep_rows
from evo.analysis.html_page import esc, notes, number, table
from evo.analysis.plots import METRIC_LABELS, seconds_name, spend_labels
from evo.analysis.svg_charts import Series, line_chart


def page(folder: Path, reader: snapshot.PartReader) -> tuple[str, str]:
    """Returns the title and body of a sweep folder's page."""
    cells, curves, waiting, frames = [], {}, [], []
    for path in sweep_rows.find_campaigns(folder):
        state = snapshot.read(path, reader)
        if state.results is None:
            waiting.append(f"{path.name}: {state.waiting_for}")
            continue
        row, curves[path.name] = compare.cell(path, state.results)
        cells.append(row)
        frames.append(compare.with_cell(state.results, path.name))
        waiting += [f"{path.name}: skipped a part that is not whole yet: {s}"
                    for s in state.skipped]
    found = compare.compared(cells, curves, pd.concat(frames, ignore_index=True)
                             if frames else pd.DataFrame())
    keys = sorted({k for row in cells for k in row["overrides"]})
    backends = {backend for row in cells for backend in row["backends"]}
    labels = spend_labels(backends)
    meaningful = {c["cell"]: c["suite"]["timing_meaningful"] for c in cells}
    rows = [(c["cell"], *[str(c["overrides"].get(k, "-")) for k in keys], c["status"],
             number(c["suite"]["exec_accuracy"], "%"), number(c["suite"]["found_accuracy"], "%"),
             number(c["suite"]["pass_at_k"].get("1"), "%"),
             speedup_cells.cell(c["suite"]["speedup_geomean"], "x", meaningful[c["cell"]]),
             *[number(c["spend"][m], "$" if m == "usd" else "f") for m in labels])
            for c in cells]
    body = [f"<h1>Sweep {esc(folder.name)}</h1><p class=\"meta\">{esc(folder)} · "
            f"{len(cells)} campaigns with rows · rows in pandas: <code>"
            f"evo.analysis.load_sweep({esc(repr(str(folder)))})</code></p>",
            notes(found["noise_notes"] + waiting),
            notes(_chart_notes(cells, curves, found)),
            '<div class="charts">' + "".join(_scaling_charts(cells, curves, found, labels))
            + "</div>",
            "<h2>Cells</h2>" + table(["cell", *keys, "status", "exec acc", "found acc (no seeds)",
                                      "pass@1", "best speedup", "evals", "tokens", "USD",
                                      f"{seconds_name(backends)}-s"], rows),
            _best(found["best_candidates"], folder),
            _grid(found["grid"]),
            _equal_compute(found["equal_compute"], labels, meaningful, found["noise_band"]),
            '<p class="meta">Each cell\'s lineages and per-task plots: <code>evo report '
            f"{esc(folder)}/CELL --html</code>.</p>"]
    return f"Sweep {folder.name}", "".join(body)


def _chart_notes(cells: list[dict], curves: dict, found: dict) -> list[str]:
    """Returns what the charts need said beside them, as their PNGs say it."""
    if not curves:
        return []
    accuracy = sweep_plots.accuracy_caption(cells, sweep_plots.shown_metrics(curves)[0])
    return ([f"accuracy: {accuracy}"] if accuracy else []) + [
        f"best speedup against compute: {noise.rising_best_note(found['noise_band'])}"]


def _scaling_charts(cells: list[dict], curves: dict, found: dict,
                    labels: dict[str, str]) -> list[str]:
    """Returns accuracy and best speedup against generation, each unit of compute and each
    parallel knob; speedups over the noise band, titled with the caveat when meaningless."""
    if not curves:
        return []
    accuracy, speedup = sweep_plots.shown_metrics(curves)
    band = found["noise_band"]
    caveat = "" if found["timing_meaningful"] is not False else " (interpreter timing)"
    xs = {"generation": {cell: list(t.index) for cell, t in curves.items()}}
    xs.update({label: {cell: list(t[m]) for cell, t in curves.items()}
               for m, label in labels.items()
               if any(float(t[m].max()) > 0 for t in curves.values())})
    charts = []
    for x_name, x_of in xs.items():
        for metric in (accuracy, speedup):
            speed = metric == speedup
            charts.append(line_chart(
                [Series(cell, x_of[cell], t[metric]) for cell, t in curves.items()],
                title=f"{'Best speedup' if speed else 'Accuracy'} vs {x_name}"
                      + (caveat if speed else ""),
                x_label=x_name + ("" if x_name == "generation" else " (cumulative)"),
                y_label=METRIC_LABELS[metric], integer_x=x_name == "generation",
                y_range=None if speed else (-0.02, 1.02), reference=1.0 if speed else None,
                band=tuple(band) if speed and band else None))
    for knob in scaling.varied(cells):
        points = scaling.at_points(cells, ("generations", knob))
        settings = sorted({p["generations"] for p in points}, key=lambda g: g or 0)
        for metric in (accuracy, speedup):
            speed = metric == speedup
            charts.append(line_chart(
                [Series(f"{g} generations", [p[knob] for p in points if p["generations"] == g],
                        [float("nan") if p[metric] is None else p[metric]
                         for p in points if p["generations"] == g]) for g in settings],
                title=f"{'Best speedup' if speed else 'Accuracy'} vs {knob}"
                      + (caveat if speed else ""), x_label=knob,
                y_label=METRIC_LABELS[metric], integer_x=True,
                y_range=None if speed else (-0.02, 1.02), reference=1.0 if speed else None,
                band=tuple(band) if speed and band else None))
    return charts


def _best(chosen: dict[str, Any], folder: Path) -> str:
    rows = [(task, c["cell"], c["candidate_id"], str(c["generation"]), str(c["island"]),
             c["operator"], best.speedup_text(c), c["ranking"]) if c else
            (task, "-", "-", "-", "-", "-", "-", "no correct candidate")
            for task, c in chosen.items()]
    return ("<h2>Best candidate per task (over every cell)</h2>"
            + table(["task", "cell", "candidate", "generation", "island", "operator", "speedup",
                     "ranked"], rows, left=3)
            + f'<p class="meta">Write one to a file: <code>evo export {esc(folder)} --task '
              "TASK</code> (the best over every cell; or <code>--candidate ID</code>).</p>")


def _grid(grid: dict[str, Any]) -> str:
    at = {(p["generations"], p["islands"]): p for p in grid["points"]}
    rows = [(str(g), *[compare.point_text(at[g, i]) if (g, i) in at else "-"
                       for i in grid["islands"]]) for g in grid["generations"]]
    return ("<h2>Generations x islands</h2><p class=\"meta\">exec accuracy / best speedup, "
            "seeds left out of both, the mean over cells that share a point</p>"
            + table(["generations", *[f"islands {i}" for i in grid["islands"]]], rows))


def _equal_compute(comparison: dict, labels: dict[str, str],
                   meaningful: dict[str, bool | None], band: list[float] | None) -> str:
    out = []
    for measure, found in comparison.items():
        names = sorted({c for b in found for c in {**b["cells"], **b["short"]}})

        def text(budget: dict, cell: str) -> str:
            if cell not in budget["cells"]:
                return f"- (spent {number(budget['short'][cell])})"
            return compare.budget_text(budget, cell, meaningful.get(cell))

        out.append(f"<h3>At equal compute: {esc(labels[measure])}</h3>"
                   + table(["cell", *[compare.budget_heading(b) for b in found]],
                           [(cell, *[text(b, cell) for b in found]) for cell in names]))
    return ("<h2>At equal compute</h2><p class=\"meta\">Each cell at the last generation it "
            "finished within each budget (gen G: exec accuracy / best speedup, seeds left out "
            f"of both); totals within {compare.BUDGET_TOLERANCE:.0%} of each other are one "
            "budget (A-B); a cell that spent less in all is left out of that budget.</p>"
            + notes([noise.rising_best_note(band)]) + "".join(out) if out else "")
