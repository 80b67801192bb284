"""How a kernel got there: its ancestors through the rows' `parent_ids`, and each step's diff.

A row names its parents by candidate id. A parent with no row of its own is a seed (folders
written before generation 0 got rows have none; docs/interfaces.md): for a built-in task it is
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


def first_scorings(rows: pd.DataFrame) -> dict[str, Any]:
    """Returns the label of each candidate id's first fresh scoring among `rows` (a reused
    row repeats another's verdict on another island or after a migration)."""
    order = ["reused", "generation"] if "reused" in rows else ["generation"]
    first = rows.sort_values(order, kind="stable").drop_duplicates("candidate_id")
    return dict(zip(first["candidate_id"].to_numpy(), first.index))


def ancestry(rows: pd.DataFrame, best: str, baseline_source: str | None = None,
             details: Callable[[Any], Mapping[str, Any]] | None = None,
             limit: int = SHOWN_ANCESTORS) -> Lineage:
    """Returns the lineage of candidate `best` among one task's rows. `details(label)` gives
    a row's parent_ids, source, strategy and error_trace when `rows` does not hold them (the
    page keeps them out of its DataFrame, evo.analysis.snapshot)."""
    label_of = first_scorings(rows)
    given: dict[str, tuple[dict, tuple[str, ...]]] = {}

    def parents_of(candidate: str) -> tuple[str, ...]:
        extra = dict(details(label_of[candidate])) if details else {}
        given[candidate] = (extra, _parent_ids(extra, rows, label_of[candidate]))
        return given[candidate][1]

    order, left_out = _walk(best, label_of, parents_of, limit)
    with_rows = [cid for cid in order if cid in label_of]
    picked = rows.loc[[label_of[cid] for cid in with_rows]]
    columns = {name: picked[name].to_numpy() for name in picked.columns}  # cheap row lookups
    at_of = {cid: at for at, cid in enumerate(with_rows)}
    baseline_id = records.candidate_id(baseline_source) if baseline_source else None
    steps: dict[str, Step] = {}
    for cid in order:
        if cid in given:
            row = {name: values[at_of[cid]] for name, values in columns.items()} | given[cid][0]
            steps[cid] = Step(cid, given[cid][1], row, row.get("source"), "row")
        elif cid == baseline_id:
            steps[cid] = Step(cid, (), None, baseline_source, "baseline")
        else:
            steps[cid] = Step(cid, (), None, None, "unknown")
    return Lineage(best, steps, left_out)


def walked_rows(rows: pd.DataFrame, best: str, details: Callable[[Any], Mapping[str, Any]],
                limit: int = SHOWN_ANCESTORS) -> list[int]:
    """Returns the labels of the rows `ancestry` walks through, through their parent_ids
    alone (`details(label)` may give only those): what a lineage will ask `details` for."""
    label_of = first_scorings(rows)
    order, _ = _walk(best, label_of, lambda cid: _parent_ids(details(label_of[cid]), rows,
                                                              label_of[cid]), limit)
    return [label_of[cid] for cid in order if cid in label_of]


def _walk(best: str, with_row: Mapping[str, Any], parents_of: Callable[[str], tuple[str, ...]],
          limit: int) -> tuple[list[str], int]:
    """Returns the ancestors of `best` (itself first, then breadth-first, each once, at most
    `limit`; only those `with_row` have parents) and how many more were referenced."""
    order: list[str] = []
    seen: set[str] = set()
    beyond: set[str] = set()
    queue = collections.deque([best])
    while queue:
        candidate = queue.popleft()
        if candidate in seen or candidate in beyond:
            continue
        if len(order) >= limit:
            beyond.add(candidate)
            continue
        seen.add(candidate)
        order.append(candidate)
        if candidate in with_row:
            queue.extend(parents_of(candidate))
    return order, len(beyond)


def _parent_ids(extra: Mapping[str, Any], rows: pd.DataFrame, label: Any) -> tuple[str, ...]:
    """Returns a row's parents: from its details, else from `rows`' own column."""
    if "parent_ids" in extra:
        raw = extra["parent_ids"]
    else:
        raw = rows.at[label, "parent_ids"] if "parent_ids" in rows else None
    return tuple(str(p) for p in raw) if raw is not None else ()


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
