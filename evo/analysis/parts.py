"""The one reader of a folder of Parquet parts: whole parts only, the columns asked for, and
kept so that a live page re-reads only the parts that landed or changed since.

A campaign writes one part per generation per island per task (evo/results.py): a long one
has thousands of parts of a few dozen rows, and each part costs the same to open however
small it is. So a part is read whole in one call (its size and mtime are then those of the
bytes parsed) and parsed by pyarrow's plain reader: only the columns asked for, no
pre-buffering (which hands every part's reads to an I/O thread), several parts at once
(pyarrow leaves the GIL while it parses). Parts are kept by (path, size, mtime_ns): one
rewritten under the same name is read again. A part that does not parse (a copy still
landing, a damaged file) is skipped and named for a live page, and refused when `strict`
(`evo report` never reports on part of the rows). experiments/perf/html_report_bench.py
times it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

PREFIX, SUFFIX = "part-", ".parquet"
THREADS = min(4, os.cpu_count() or 1)


class Part(NamedTuple):
    """A part: its path, and (size, mtime_ns), which change when it is rewritten (a tuple:
    a listing makes thousands)."""

    path: str
    key: tuple[int, int]


@dataclasses.dataclass(frozen=True)
class Kept:
    """What a part read gave: its Part (key of the bytes read), its mtime, its table."""

    part: Part
    mtime: float
    table: pa.Table


@dataclasses.dataclass(frozen=True)
class Rows:
    """A folder read: `table` holds the rows of `parts` in order (None without any), with
    `written_at`, each row's part's mtime; `row_counts` has each part's rows; `skipped`
    names the parts that did not read."""

    table: pa.Table | None
    parts: tuple[Part, ...]
    row_counts: tuple[int, ...]
    skipped: tuple[str, ...]


def listing(folder: Path) -> list[Part]:
    """Returns the parts in `folder` in name order (generation first), none when it is
    missing. A part removed while listed is left out."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(PREFIX) and entry.name.endswith(SUFFIX):
                    try:
                        stat = entry.stat()
                    except OSError:
                        continue
                    found.append(Part(entry.path, (stat.st_size, stat.st_mtime_ns)))
    except OSError:
        return []
    return sorted(found)  # one folder: by path is by name


class PartReader:
    """Reads the parts of folders, keeping what it read for the next call."""

    def __init__(self) -> None:
        self._folders: dict[tuple[Path, Any], dict[str, Kept]] = {}
        self._rows: dict[tuple[str, tuple[str, ...]], tuple[tuple[int, int], dict]] = {}

    def read(self, folder: Path, columns: tuple[str, ...] | None = None,
             strict: bool = False) -> Rows:
        """Returns `columns` (those a part has; all when None) of every whole part in
        `folder`; `strict` raises ValueError naming the first part that does not read."""
        listed = listing(folder)
        before = self._folders.get((folder, columns), {})
        stale = [part for part in listed
                 if part.path not in before or before[part.path].part.key != part.key]
        fresh = dict(zip((part.path for part in stale), read_parts(stale, columns)))
        kept = {}
        for part in listed:
            read = fresh[part.path] if part.path in fresh else before[part.path]
            if isinstance(read, Kept):
                kept[part.path] = read
            elif strict:
                raise read
        self._folders[(folder, columns)] = kept  # parts gone from the folder are let go
        skipped = tuple(os.path.relpath(part.path, folder.parent) for part in listed
                        if part.path not in kept)
        reads = list(kept.values())
        if not reads:
            return Rows(None, (), (), skipped)
        table = _concat([read.table for read in reads])
        counts = tuple(read.table.num_rows for read in reads)
        written_at = np.repeat([read.mtime for read in reads], counts)
        return Rows(table.append_column("written_at", pa.array(written_at, pa.float64())),
                    tuple(read.part for read in reads), counts, skipped)

    def rows(self, wanted: dict[Part, set[int]],
             columns: tuple[str, ...]) -> dict[Part, dict[int, dict[str, Any]] | None]:
        """Returns `columns` of the rows at these offsets of these parts, as they were when
        listed: rows kept from before, the others read (several parts at once) and kept,
        those rows only (a part's sources are most of its bytes). None for a part that no
        longer reads or was rewritten since: the rows read from it are not its rows now."""
        missing = [part for part, offsets in wanted.items()
                   if not offsets <= self._kept_rows(part, columns).keys()]
        for part, read in zip(missing, read_parts(missing, columns)):
            if isinstance(read, Kept) and read.part.key == part.key:
                offsets = sorted(wanted[part] | self._kept_rows(part, columns).keys())
                taken = read.table.take(offsets).to_pylist()
                self._rows[(part.path, columns)] = (part.key, dict(zip(offsets, taken)))
        return {part: ({at: kept[at] for at in offsets}
                       if offsets <= (kept := self._kept_rows(part, columns)).keys() else None)
                for part, offsets in wanted.items()}

    def _kept_rows(self, part: Part, columns: tuple[str, ...]) -> dict[int, dict[str, Any]]:
        key, kept = self._rows.get((part.path, columns), (None, {}))
        return kept if key == part.key else {}


def frame(table: pa.Table | None) -> pd.DataFrame:
    """Returns a table as pandas (empty without one), `task` as Python strings: metrics
    takes set() of it often, much faster over an object column than over Arrow strings."""
    if table is None:
        return pd.DataFrame()
    converted = table.combine_chunks().to_pandas()  # one chunk per part makes filters slow
    if "task" in converted:
        converted["task"] = converted["task"].astype(object)
    return converted


def _concat(tables: list[pa.Table]) -> pa.Table:
    """Returns the tables one after the other; parts written by older versions may lack a
    column or type it otherwise, and then the schemas are unified (slower)."""
    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid:
        return pa.concat_tables(tables, promote_options="permissive")


def read_parts(parts: list[Part], columns: tuple[str, ...] | None) -> list[Kept | ValueError]:
    """Returns each part read, or the error of one that is not whole, on THREADS threads,
    each taking a run of parts rather than one part per task, so that handing work over
    costs little."""
    if len(parts) < 2 * THREADS:
        return [read_part(part.path, columns) for part in parts]
    size = -(-len(parts) // THREADS)
    runs = [parts[start:start + size] for start in range(0, len(parts), size)]
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        done = pool.map(lambda run: [read_part(part.path, columns) for part in run], runs)
        return [read for run in done for read in run]


def read_part(path: str, columns: tuple[str, ...] | None) -> Kept | ValueError:
    """Returns `columns` of the part at `path`, or the error naming it when it does not
    read whole."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            data = handle.read()
        reader = pq.ParquetReader()
        reader.open(pa.BufferReader(data), pre_buffer=False)
        wanted = None if columns is None else [
            i for i, leaf in enumerate(reader.column_paths) if leaf[0] in columns]
        table = reader.read_all(column_indices=wanted, use_threads=False)
    except (pa.ArrowException, OSError) as error:
        return ValueError(f"{path}: not a readable Parquet part ({error})")
    return Kept(Part(path, (stat.st_size, stat.st_mtime_ns)), stat.st_mtime, table)
