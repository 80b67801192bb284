"""The lineage block of a task's section: the best kernel's ancestors as a tree, and for each
step its operator, strategy text and diff against each parent; choosing a node shows its step.

The tree reads from the oldest ancestor down to the best along first parents; a crossover's
other parent opens a branch under the child. An ancestor reached twice is drawn once, and a
link points to it the second time. The oldest is the starting kernel: the seed row of
generation 0 (the task's baseline, scored like any candidate), or in a folder written before
seeds had rows, the baseline recognized by its id.
"""

from __future__ import annotations

import math

import pandas as pd

from evo.analysis import lineage, speedup_cells
from evo.analysis.html_page import diff_block, esc, table
from evo.analysis.metrics import SEED_OPERATOR

TRACE_CHARS = 4000
"""Characters of an ancestor's error trace shown (a reflector child's parent failed)."""
SEED_ORIGIN = ("the starting kernel: the task's baseline kernel, seeded into generation 0 and "
               "scored like any candidate")


def _label(step: lineage.Step) -> str:
    if step.origin == "baseline":
        return "baseline (seed)"
    if step.row is None:
        return f"seed {step.candidate_id[:10]} (no row)"
    row = step.row
    if row.get("correct"):
        outcome = _speedup(row) if _present(row.get("speedup")) else "correct"
    else:
        outcome = str(row.get("failure_kind") or "incorrect")
    made_by = ("seed (starting kernel)" if row.get("operator") == SEED_OPERATOR
               else row.get("operator"))
    return f"g{row.get('generation')} i{row.get('island')} {made_by} {outcome}"


def _speedup(row: dict) -> str:
    return speedup_cells.cell(row.get("speedup"), "x", row.get("timing_meaningful"))


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def section(task_index: int, task: str, rows: pd.DataFrame, best: str, suite: str | None,
            details=None) -> str:
    """Returns the lineage block of `task` (its rows), ending at candidate `best`;
    `details` as lineage.ancestry takes it."""
    found = lineage.ancestry(rows, best, lineage.builtin_baseline(task, suite), details)
    keys = {cid: f"{task_index}-{n}" for n, cid in enumerate(found.steps)}
    placed: set[str] = set()

    def node(cid: str) -> str:
        step = found.steps[cid]
        failed = step.row is not None and not step.row.get("correct")
        classes = "node" + (" best selected" if cid == best else "") + (" failed" if failed else "")
        return (f'<button type="button" class="{classes}" data-node="{keys[cid]}" '
                f'data-cid="{esc(cid)}" aria-pressed="{"true" if cid == best else "false"}">'
                f"{esc(_label(step))}</button>")

    def chain(start: str) -> str:
        walked, cid = [], start
        while cid is not None and cid in found.steps and cid not in placed:
            walked.append(cid)
            placed.add(cid)
            parents = found.steps[cid].parents
            cid = parents[0] if parents else None
        items = []
        if cid is not None and cid in keys:
            items.append(f'<li><a class="ref" data-node="{keys[cid]}" href="#">continues from '
                         f"{esc(_label(found.steps[cid]))}</a></li>")
        elif cid is not None:
            items.append('<li class="hint">older ancestors not shown</li>')
        for cid in reversed(walked):
            branches = "".join(f'<div class="branch"><div class="hint">crossed with:</div>'
                               f"<ol>{chain(other)}</ol></div>"
                               for other in found.steps[cid].parents[1:])
            items.append(f"<li>{node(cid)}{branches}</li>")
        return "".join(items)

    tree = chain(best)
    left_out = (f'<p class="hint">{found.left_out} older ancestors not walked (the tree stops at '
                f"{lineage.SHOWN_ANCESTORS})</p>" if found.left_out else "")
    steps = "".join(_detail(found, cid, keys, best) for cid in found.steps)
    final = found.steps[best].source
    final_html = ("" if final is None else f'<h3>Final source ({esc(best)})</h3>'
                  f'<pre class="final-source">{esc(final)}</pre>')
    return (f'<div class="lineage" data-task="{esc(task)}"><div class="tree"><ol>{tree}</ol>'
            f"{left_out}</div><div>{steps}</div></div>{final_html}")


def _detail(found: lineage.Lineage, cid: str, keys: dict[str, str], best: str) -> str:
    step = found.steps[cid]
    parts = [f"<h3>{esc(_label(step))}</h3>"]
    row = step.row or {}
    facts = [("candidate", cid)]
    if step.row is not None:
        facts += [("generation", row.get("generation")), ("island", row.get("island")),
                  ("operator", row.get("operator")), ("stage reached", row.get("stage_reached")),
                  ("correct", row.get("correct")),
                  ("failure kind", row.get("failure_kind")),
                  ("speedup", _speedup(row)),
                  ("debug attempts in lineage", row.get("lineage_debug_count", "-"))]
        if row.get("operator") == SEED_OPERATOR:
            facts.append(("origin", SEED_ORIGIN))
    elif step.origin == "baseline":
        facts.append(("origin", "the task's baseline kernel, seeded into generation 0 (no row)"))
    else:
        facts.append(("origin", "a seed or a kernel with no row in this folder"))
    parts.append(table(["", ""], [(k, v if _present(v) else "-") for k, v in facts]))
    if row.get("strategy"):
        parts.append(f'<h4>strategy ({esc(row.get("operator"))})</h4>'
                     f'<pre class="strategy">{esc(row["strategy"])}</pre>')
    for parent in step.parents:
        above = found.steps.get(parent)
        name = _label(above) if above else parent
        if above is None or above.source is None or step.source is None:
            parts.append(f"<h4>diff vs parent {esc(name)}</h4><p>the parent's source is not in "
                         "the rows: no diff</p>")
            continue
        lines = lineage.unified_diff(above.source, step.source, f"parent {parent}", f"this {cid}")
        parts.append(f"<h4>diff vs parent {esc(name)}</h4>"
                     + (diff_block(lines) if lines else "<p>same source</p>"))
    if row.get("error_trace"):
        parts.append(f"<h4>error</h4><pre>{esc(str(row['error_trace'])[:TRACE_CHARS])}</pre>")
    if cid == best:
        parts.append("<p>Its whole source: <em>final source</em>, below the lineage.</p>")
    elif step.source is not None and not step.parents:
        parts.append(f"<h4>source</h4><pre>{esc(step.source)}</pre>")
    hidden = "" if cid == best else " hidden"
    return f'<div class="step-detail" id="detail-{keys[cid]}"{hidden}>{"".join(parts)}</div>'
