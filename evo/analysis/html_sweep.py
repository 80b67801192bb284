"""The page of a sweep folder: its scaling plots and its cells at equal compute.

The same numbers as `evo report SWEEP` (evo.analysis.compare), drawn as SVG and read through
evo.analysis.snapshot, so a sweep still running shows its finished and running cells and
names the ones with nothing to show yet. One page per sweep, not per cell: a cell's lineages
are on its own page (`evo report SWEEP/CELL --html`).
"""

from __future__ import annotations

from pathlib import Path

from evo.analysis import compare, snapshot
from evo.analysis.html_page import esc, notes, number, table
from evo.analysis.plots import seconds_name, spend_labels
from evo.analysis.svg_charts import Series, line_chart


def page(folder: Path, reader: snapshot.PartReader) -> tuple[str, str]:
    """Returns the title and body of a sweep folder's page."""
    cells, curves, waiting = [], {}, []
    for path in compare.find_campaigns(folder):
        state = snapshot.read(path, reader)
        if state.results is None:
            waiting.append(f"{path.name}: {state.waiting_for}")
            continue
        row, curves[path.name] = compare.cell(path, state.results)
        cells.append(row)
        waiting += [f"{path.name}: skipped a part that is not whole yet: {s}"
                    for s in state.skipped]
    keys = sorted({k for row in cells for k in row["overrides"]})
    backends = {backend for row in cells for backend in row["backends"]}
    labels = spend_labels(backends)
    rows = []
    for c in cells:
        suite, spend = c["suite"], c["spend"]
        rows.append((c["cell"], *[str(c["overrides"].get(k, "-")) for k in keys], c["status"],
                     number(suite["exec_accuracy"], "%"), number(suite["pass_at_k"].get("1"), "%"),
                     number(suite["speedup_geomean"], "x"), number(spend["evaluations"]),
                     number(spend["tokens"]), number(spend["usd"], "$"), number(spend["gpu_s"])))
    body = [f"<h1>Sweep {esc(folder.name)}</h1><p class=\"meta\">{esc(folder)} · "
            f"{len(cells)} campaigns with rows</p>", notes(waiting),
            '<div class="charts">' + "".join(_scaling_charts(curves, labels)) + "</div>",
            "<h2>Cells</h2>" + table(["cell", *keys, "status", "exec acc", "pass@1",
                                      "speedup geomean", "evals", "tokens", "USD",
                                      f"{seconds_name(backends)}-s"], rows),
            _equal_compute(compare.equal_compute(curves), labels),
            '<p class="meta">Each cell\'s lineages and per-task plots: <code>evo report '
            f"{esc(folder)}/CELL --html</code>.</p>"]
    return f"Sweep {folder.name}", "".join(body)


def _scaling_charts(curves: dict, labels: dict[str, str]) -> list[str]:
    if not curves:
        return []
    charts = [line_chart([Series(cell, list(t.index), t["exec_accuracy"])
                          for cell, t in curves.items()],
                         title="Execution accuracy vs generation", x_label="generation",
                         y_label="fraction of tasks", y_range=(-0.02, 1.02), integer_x=True)]
    for measure, label in labels.items():
        if any(float(t[measure].max()) > 0 for t in curves.values()):
            charts.append(line_chart(
                [Series(cell, list(t[measure]), t["exec_accuracy"]) for cell, t in curves.items()],
                title=f"Accuracy vs {label}", x_label=f"{label} (cumulative)",
                y_label="execution accuracy", y_range=(-0.02, 1.02)))
    return charts


def _equal_compute(comparison: dict, labels: dict[str, str]) -> str:
    out = []
    for measure, found in comparison.items():
        rows = [(cell, number(m["generation"]), number(m["spent"]), number(m["exec_accuracy"], "%"),
                 number(m["pass_at_1"], "%"), number(m["speedup_geomean"], "x"))
                for cell, m in found["cells"].items()]
        out.append(f"<h3>At equal compute: {esc(labels[measure])} &le; "
                   f"{esc(number(found['budget']))}</h3>"
                   + table(["cell", "generation", "spent", "exec acc", "pass@1",
                            "speedup geomean"], rows))
    return "<h2>At equal compute</h2>" + "".join(out) if out else ""

