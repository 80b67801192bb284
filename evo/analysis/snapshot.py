"""A results folder read while a campaign may still be writing it: whole parts only.

The engine writes each part atomically (evo/results.py), yet a folder synced or copied part by
part, or a disk filling up, can show a part that is not whole yet. Such a part is skipped and
named, never fatal: the page of a running campaign must keep rendering. Parts are remembered
by (path, size, mtime), so a live page re-reads only the parts that landed since: opening a
part has a fixed cost however small it is, and a long campaign has thousands (several are
read at once, as pyarrow leaves the GIL; experiments/perf/html_report_bench.py times it).

A row's `written_at` is its part's modification time: when its generation of its island was
written, the only wall clock the evaluations carry (offline campaigns have no LLM calls with
`finished_at`). It is lost by a copy that does not keep times (`cp` without `-p`).
"""

from __future__ import annotations

import bisect
import concurrent.futures
import dataclasses
import datetime
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evo.analysis import metrics

PART_GLOB = "part-*.parquet"
CALL_COLUMNS = ("task", "island", "generation", "role", "prompt_tokens", "completion_tokens",
                "cost_usd", "success", "failure_kind")
"""The llm_calls columns the page reads (the others hold whole prompts and answers)."""
DETAIL_COLUMNS = ("parent_ids", "source", "strategy", "error_trace")
"""evaluations columns kept in Arrow, out of the DataFrame: pandas copies a column's values on
every row filter, and the page needs these for a few hundred lineage steps only."""
UNUSED_COLUMNS = ("campaign", "max_abs_err", "rel_err", "latency_p20_us", "latency_p80_us",
                  "harness_version", "llm_model", "llm_latency_s", "seed", "sandboxed")
"""evaluations columns the page shows nowhere: not read at all."""
READERS = min(8, os.cpu_count() or 1)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One campaign folder as it stands now.

    Attributes:
      results: the rows read, or None while there is nothing to show. Its evaluations carry
        `written_at` (epoch seconds) and lack DETAIL_COLUMNS and UNUSED_COLUMNS.
      waiting_for: why `results` is None ("" otherwise).
      skipped: parts that did not read whole (being written, or damaged).
      started_at: epoch seconds from campaign.json's `started_at`, else the first part's time.
      details: DETAIL_COLUMNS of the evaluations, its row i being the row labelled i.
    """

    path: Path
    results: metrics.Results | None
    waiting_for: str
    skipped: tuple[str, ...]
    started_at: float | None
    details: pa.Table | None = None

    @functools.cached_property
    def _chunk_starts(self) -> list[int]:
        column = self.details.column(0)
        starts, at = [], 0
        for chunk in column.chunks:
            starts.append(at)
            at += len(chunk)
        return starts

    def detail(self, label: int) -> dict[str, Any]:
        """Returns the DETAIL_COLUMNS of the evaluations row labelled `label`."""
        chunk = bisect.bisect_right(self._chunk_starts, label) - 1
        offset = label - self._chunk_starts[chunk]
        return {name: self.details.column(name).chunk(chunk)[offset].as_py()
                for name in self.details.column_names}


class PartReader:
    """Reads Parquet parts, keeping each table by (path, size, mtime_ns) for the next read."""

    def __init__(self) -> None:
        self._tables: dict[Path, tuple[tuple[int, int], pa.Table]] = {}

    def read(self, folder: Path, columns: tuple[str, ...] | None = None,
             exclude: tuple[str, ...] = ()) -> tuple[pa.Table | None, list[str]]:
        """Returns the rows of every whole part in `folder` (with `written_at`; None when
        there are none), only `columns` when given, never `exclude`, and the parts that did
        not read."""
        found = []
        for part in sorted(folder.glob(PART_GLOB)) if folder.is_dir() else []:
            try:
                stat = part.stat()
            except OSError:  # removed since the listing
                continue
            found.append((part, (stat.st_size, stat.st_mtime_ns), stat.st_mtime))
        stale = [(part, key, mtime) for part, key, mtime in found
                 if self._tables.get(part, (None,))[0] != key]
        with concurrent.futures.ThreadPoolExecutor(READERS) as pool:
            fresh = pool.map(lambda item: _try_read(item[0], columns, exclude, item[2]), stale)
            for (part, key, _), table in zip(stale, fresh):
                if table is None:
                    self._tables.pop(part, None)
                else:
                    self._tables[part] = (key, table)
        tables = [self._tables[part][1] for part, _, _ in found if part in self._tables]
        skipped = [str(part.relative_to(folder.parent)) for part, _, _ in found
                   if part not in self._tables]
        if not tables:
            return None, skipped
        return pa.concat_tables(tables, promote_options="permissive"), skipped


def _try_read(part: Path, columns: tuple[str, ...] | None, exclude: tuple[str, ...],
              mtime: float) -> pa.Table | None:
    """Returns a part's table with `written_at`, None when it does not read whole."""
    try:
        handle = pq.ParquetFile(part)
        names = [c for c in handle.schema_arrow.names
                 if (columns is None or c in columns) and c not in exclude]
        table = handle.read(columns=names, use_threads=False)
    except (pa.ArrowException, OSError):
        return None
    return table.append_column("written_at", pa.array([mtime] * table.num_rows, pa.float64()))


def read(directory: Path | str, reader: PartReader | None = None) -> Snapshot:
    """Returns a campaign folder as it stands; never raises for a folder being written."""
    path = Path(directory)
    reader = reader or PartReader()
    try:
        meta = json.loads((path / "campaign.json").read_text())
    except (OSError, json.JSONDecodeError) as error:
        return Snapshot(path, None, f"campaign.json is not readable yet ({error})", (), None)
    table, skipped = reader.read(path / "evaluations", exclude=UNUSED_COLUMNS)
    calls, skipped_calls = reader.read(path / "llm_calls", CALL_COLUMNS)
    skipped = tuple(skipped + skipped_calls)
    details = None
    if table is not None:
        kept = [c for c in DETAIL_COLUMNS if c in table.column_names]
        details = table.select(kept) if kept else None
        table = table.drop_columns(kept)
    evaluations = _frame(table)
    started = _started_at(meta, evaluations)
    if evaluations.empty:
        return Snapshot(path, None, "no evaluation rows yet: the first generation has not "
                                    "been written", skipped, started)
    missing = [c for c in metrics.REQUIRED_EVALUATION_COLUMNS if c not in evaluations.columns]
    if missing:
        return Snapshot(path, None, f"{path / 'evaluations'}: missing columns {missing}",
                        skipped, started)
    return Snapshot(path, metrics.results_of(path, meta, evaluations, _frame(calls)), "",
                    skipped, started,
                    details)


def _frame(table: pa.Table | None) -> pd.DataFrame:
    """Returns a table as pandas, `task` as Python strings: metrics takes set() of it often,
    ten times faster over an object column than over pandas' Arrow-backed str."""
    if table is None:
        return pd.DataFrame()
    frame = table.combine_chunks().to_pandas()  # one chunk per part makes every filter slow
    if "task" in frame:
        frame["task"] = frame["task"].astype(object)
    return frame


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
            if (folder / sub).is_dir():
                entries.extend(_entry(p) for p in sorted((folder / sub).glob(PART_GLOB)))
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
