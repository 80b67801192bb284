"""How a kernel got there: its ancestors through the rows' `parent_ids`, and each step's diff.

A row names its parents by candidate id. A parent with no row of its own is a seed (the
population of generation 0 gets no rows; docs/interfaces.md): for a built-in task it is
recognized as the task's baseline when the baseline's source hashes to that id, and is
otherwise shown as an id with no source. A crossover has two parents, so ancestry is a graph;
each ancestor is listed once. A long night's lineage can be hundreds of steps: the walk stops
at SHOWN_ANCESTORS and says how many it left out.
"""

from __future__ import annotations

import collections
import dataclasses
import difflib
import importlib.util
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from evo import records

SHOWN_ANCESTORS = 120
"""Ancestors walked per lineage (a page holds one lineage per task)."""
DIFF_CONTEXT = 3


@dataclasses.dataclass(frozen=True)
class Step:
    """One kernel of a lineage.

    Attributes:
      row: its evaluations row (the first scoring of it, not a reused copy), None without one.
      source: its module source, None when neither a row nor the baseline gives it.
      origin: "row", "baseline" (a seed recognized as the task's baseline) or "unknown".
    """

    candidate_id: str
    parents: tuple[str, ...]
    row: Mapping[str, Any] | None
    source: str | None
    origin: str


@dataclasses.dataclass(frozen=True)
class Lineage:
    """The ancestors of `best`, best first then breadth-first; `left_out` counts ancestors
    referenced but not walked (past SHOWN_ANCESTORS)."""

    best: str
    steps: dict[str, Step]
    left_out: int


def first_scorings(rows: pd.DataFrame) -> pd.Series:
    """Returns the label of each candidate id's first fresh scoring among `rows` (a reused
    row repeats another's verdict on another island or after a migration)."""
    order = ["reused", "generation"] if "reused" in rows else ["generation"]
    first = rows.sort_values(order, kind="stable").drop_duplicates("candidate_id")
    return pd.Series(first.index, index=first["candidate_id"].to_numpy())


def ancestry(rows: pd.DataFrame, best: str, baseline_source: str | None = None,
             details: Callable[[Any], Mapping[str, Any]] | None = None,
             limit: int = SHOWN_ANCESTORS) -> Lineage:
    """Returns the lineage of candidate `best` among one task's rows. `details(label)` gives
    a row's parent_ids, source, strategy and error_trace when `rows` does not hold them (the
    page keeps them out of its DataFrame, evo.analysis.snapshot)."""
    labels = first_scorings(rows)
    columns = {name: rows[name].to_numpy() for name in rows.columns}  # cheap row lookups
    baseline_id = records.candidate_id(baseline_source) if baseline_source else None
    steps: dict[str, Step] = {}
    beyond: set[str] = set()
    queue = collections.deque([best])
    while queue:
        candidate = queue.popleft()
        if candidate in steps or candidate in beyond:
            continue
        if len(steps) >= limit:
            beyond.add(candidate)
            continue
        if candidate in labels.index:
            label = labels[candidate]
            at = rows.index.get_loc(label)
            row = {name: values[at] for name, values in columns.items()}
            row.update(details(label) if details else {})
            raw = row.get("parent_ids")
            parents = tuple(str(p) for p in raw) if raw is not None else ()
            steps[candidate] = Step(candidate, parents, row, row.get("source"), "row")
            queue.extend(parents)
        elif candidate == baseline_id:
            steps[candidate] = Step(candidate, (), None, baseline_source, "baseline")
        else:
            steps[candidate] = Step(candidate, (), None, None, "unknown")
    return Lineage(best, steps, len(beyond))


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def builtin_baseline(task: str, suite: str | None) -> str | None:
    """Returns a built-in task's baseline kernel source (read from its file, no torch
    import), None for another suite or a name that is not a plain identifier."""
    if suite not in (None, "builtin") or not _PLAIN_NAME.match(task or ""):
        return None
    spec = importlib.util.find_spec("benchmarks")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "builtin" / "kernels" / f"{task}.py"
    try:
        return path.read_text()
    except OSError:
        return None


def unified_diff(parent: str, child: str, parent_name: str, child_name: str) -> list[str]:
    """Returns the unified diff of two sources as lines (empty when they are the same text)."""
    return list(difflib.unified_diff(parent.splitlines(), child.splitlines(), parent_name,
                                     child_name, lineterm="", n=DIFF_CONTEXT))
