"""A results folder read while a campaign may still be writing it: whole parts only.

The engine writes each part atomically (evo/results.py), yet a folder synced or copied part by
part, or a disk filling up, can show a part that is not whole yet. Such a part is skipped and
named, never fatal: the page of a running campaign must keep rendering.

The numbers need a few small columns of every row (metrics.EVALUATION_COLUMNS); the sources,
strategies and traces are most of a part's bytes and the page shows them for its lineages
only, so those (DETAIL_COLUMNS) are read from a part only when a lineage asks for its rows.

A row's `written_at` is its part's modification time: when its generation of its island was
written, the only wall clock the evaluations carry (offline campaigns have no LLM calls with
`finished_at`). It is lost by a copy that does not keep times (`cp` without `-p`).
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from evo.analysis import metrics, parts
from evo.analysis.parts import PartReader

DETAIL_COLUMNS = ("source", "strategy", "error_trace", "stage_reached", "lineage_debug_count")
"""The evaluations columns a lineage step shows, read from its part when it is shown."""


@dataclasses.dataclass(frozen=True)
class Details:
    """What a lineage needs of the evaluations rows beyond their numbers: `parent_ids`,
    read with them (a lineage is walked through it), and DETAIL_COLUMNS, read from a
    row's part (`parts`, the first row of each labelled by `starts`) when asked for."""

    reader: PartReader
    parts: tuple[parts.Part, ...]
    starts: tuple[int, ...]
    parent_ids: pa.ChunkedArray

    def parents(self, label: int) -> dict[str, Any]:
        """Returns {"parent_ids": ...} of the row labelled `label`."""
        return {"parent_ids": self.parent_ids[label].as_py()}

    def fetch(self, labels: list[int]) -> None:
        """Reads the DETAIL_COLUMNS of these rows now, several parts at once."""
        wanted: dict[parts.Part, set[int]] = {}
        for label in labels:
            index = self._index(label)
            wanted.setdefault(self.parts[index], set()).add(label - self.starts[index])
        self.reader.rows(wanted, DETAIL_COLUMNS)

    def row(self, label: int) -> dict[str, Any]:
        """Returns `parent_ids` and DETAIL_COLUMNS of the row labelled `label` (only the
        first when its part was rewritten or removed since: the next read shows it)."""
        index = self._index(label)
        part, offset = self.parts[index], label - self.starts[index]
        found = self.reader.rows({part: {offset}}, DETAIL_COLUMNS)[part]
        return self.parents(label) | (found[offset] if found is not None else {})

    def _index(self, label: int) -> int:
        """Returns the index in `parts` of the part holding the row labelled `label`."""
        return bisect.bisect_right(self.starts, label) - 1


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One campaign folder as it stands now.

    Attributes:
      results: the rows read, or None while there is nothing to show. Its evaluations carry
        `written_at` (epoch seconds), metrics.EVALUATION_COLUMNS only.
      waiting_for: why `results` is None ("" otherwise).
      skipped: parts that did not read whole (being written, or damaged).
      started_at: epoch seconds from campaign.json's `started_at`, else the first part's time.
      details: the evaluations' parent_ids, and where their DETAIL_COLUMNS are read from.
      unscored: campaign.json read and no evaluations part at all, whole or not: nothing
        was scored yet, or the campaign ended before anything was (evo.analysis.outcome).
    """

    path: Path
    results: metrics.Results | None
    waiting_for: str
    skipped: tuple[str, ...]
    started_at: float | None
    details: Details | None = None
    unscored: bool = False

    def detail(self, label: int) -> dict[str, Any]:
        """Returns parent_ids and DETAIL_COLUMNS of the evaluations row labelled `label`."""
        return self.details.row(label)


def read(directory: Path | str, reader: PartReader | None = None) -> Snapshot:
    """Returns a campaign folder as it stands; never raises for a folder being written."""
    path = Path(directory)
    reader = reader or PartReader()
    try:
        meta = json.loads((path / "campaign.json").read_text())
    except (OSError, json.JSONDecodeError) as error:
        return Snapshot(path, None, f"campaign.json is not readable yet ({error})", (), None)
    rows = reader.read(path / "evaluations", metrics.EVALUATION_COLUMNS + ("parent_ids",))
    calls = reader.read(path / "llm_calls", metrics.CALL_COLUMNS)
    skipped = rows.skipped + calls.skipped
    table, parent_ids = _split_parents(rows.table)
    evaluations = parts.frame(table)
    started = _started_at(meta, evaluations)
    if evaluations.empty:
        return Snapshot(path, None, "no evaluation rows yet: the first generation has not "
                                    "been written", skipped, started,
                        unscored=not rows.parts and not rows.skipped)
    missing = metrics.missing_columns(evaluations)
    if missing:
        return Snapshot(path, None, f"{path / 'evaluations'}: missing columns {missing}",
                        skipped, started)
    starts = tuple(int(start) for start in np.cumsum((0,) + rows.row_counts[:-1]))
    return Snapshot(path, metrics.results_of(path, meta, evaluations, parts.frame(calls.table)), "",
                    skipped, started, Details(reader, rows.parts, starts, parent_ids))


def _split_parents(table: pa.Table | None) -> tuple[pa.Table | None, pa.ChunkedArray | None]:
    """Returns the table without `parent_ids`, and `parent_ids` (nulls where parts lack it):
    kept in Arrow, as pandas would copy its lists on every row filter."""
    if table is None:
        return None, None
    if "parent_ids" not in table.column_names:
        return table, pa.chunked_array([pa.nulls(table.num_rows, pa.list_(pa.string()))])
    return table.drop_columns(["parent_ids"]), table.column("parent_ids")


def _started_at(meta: dict, evaluations: pd.DataFrame) -> float | None:
    try:
        return datetime.datetime.fromisoformat(str(meta["started_at"])).timestamp()
    except (KeyError, ValueError):
        return float(evaluations["written_at"].min()) if len(evaluations) else None


def fingerprint(directory: Path | str) -> str:
    """Returns a short hash of what a page of `directory` is made from (names, sizes and
    mtimes of campaign.json, the parts, torch timings and sweep markers, in every campaign
    of a sweep): it changes when something lands, and costs a directory listing."""
    path = Path(directory)
    entries = []
    for folder in [path] + sorted(p for p in _subfolders(path) if (p / "campaign.json").exists()):
        for name in ("campaign.json", "sweep_cell.json", "sweep.json", "torch_timings.parquet"):
            entries.append(_entry(folder / name))
        for sub in ("evaluations", "llm_calls"):
            entries.extend(f"{part.path} {part.key[0]} {part.key[1]}"
                           for part in parts.listing(folder / sub))
    return hashlib.sha1("\n".join(entries).encode()).hexdigest()[:16]


def _subfolders(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir()]
    except OSError:
        return []


def _entry(path: Path) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return f"{path} -"
    return f"{path} {stat.st_size} {stat.st_mtime_ns}"
