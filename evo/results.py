"""The results folder: Parquet parts for evaluations and LLM calls, and campaign.json.

Islands advance at their own pace, so parts are written one per generation of one island
(`part-00003-softmax-i001.parquet` holds generation 3 of softmax's island 1, generation 0 its
seeds): names sort by generation, then task, then island, whatever order they were written
in. Each is written atomically: a hidden temporary file, fsync, rename. A reader (pandas,
polars, DuckDB on the folder) never sees half a part, and pyarrow skips the hidden
temporaries. A part is never rewritten, except when a resumed campaign redoes a generation
that was written but not checkpointed and its rows come out different (only possible with a
live LLM); see `write_part`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from evo.records import Candidate, Evaluation, Task

_ARROW_TYPES = {
    "str": pa.string(), "str | None": pa.string(), "bool": pa.bool_(), "int": pa.int64(),
    "float": pa.float64(), "float | None": pa.float64(),
    "tuple[str, ...]": pa.list_(pa.string()), "tuple[float, ...]": pa.list_(pa.float64()),
    "tuple[float | None, ...]": pa.list_(pa.float64()),  # None: a case not timed
}
"""Arrow type of each annotation an Evaluation field may have (a new kind fails loudly)."""

_EVALUATION_FIELDS = [field.name for field in dataclasses.fields(Evaluation)]
_LIST_FIELDS = [field.name for field in dataclasses.fields(Evaluation)
                if field.type.startswith("tuple")]

EVALUATION_SCHEMA = pa.schema(
    [("campaign", pa.string()), ("task", pa.string()), ("suite", pa.string()),
     ("difficulty", pa.int64()), ("island", pa.int64()), ("generation", pa.int64()),
     ("parent_ids", pa.list_(pa.string())), ("operator", pa.string()),
     ("lineage_debug_count", pa.int64()), ("source", pa.string()), ("strategy", pa.string())]
    + [(field.name, _ARROW_TYPES[field.type]) for field in dataclasses.fields(Evaluation)]
    + [("llm_model", pa.string()), ("prompt_tokens", pa.int64()),
       ("completion_tokens", pa.int64()), ("cost_usd", pa.float64()),
       ("llm_latency_s", pa.float64()), ("reused", pa.bool_()), ("seed", pa.int64())])
"""One row per candidate of an island's generation (its seeds as generation 0, then its
offspring): where it came from, every Evaluation field (so a row gives back its Evaluation),
what its LLM call cost, whether its verdict was reused. docs/interfaces.md lists the columns."""

LLM_CALL_SCHEMA = pa.schema([
    ("campaign", pa.string()), ("task", pa.string()), ("island", pa.int64()),
    ("generation", pa.int64()), ("role", pa.string()), ("model", pa.string()),
    ("request_hash", pa.string()), ("sample_index", pa.int64()),
    ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
    ("latency_s", pa.float64()), ("cost_usd", pa.float64()), ("success", pa.bool_()),
    ("error", pa.string()), ("response", pa.string()), ("attempts", pa.int64()),
    ("messages_json", pa.string()), ("replay_matched", pa.string()),
    ("failure_kind", pa.string()), ("finished_at", pa.timestamp("ms", tz="UTC")),
    ("recorded_from", pa.string()),
])
"""One row per LLM call, as `LLMClient.drain_calls` hands them over plus where they came from.
`failure_kind` is null for a usable answer, else an `operators.call_failures` kind or, for an
answer without usable code, the parser's word (`no_code_block`, ...) with `error` its reason.
`recorded_from` is file:line for a reply read from `operators.generations_from`, else null
(and absent from parts written before it existed: read them with this schema)."""


def evaluation_row(campaign: str, task: Task, candidate: Candidate, evaluation: Evaluation,
                   reused: bool, seed: int) -> dict:
    """Returns the `evaluations/` row of one scored candidate (a seed or an offspring)."""
    llm = candidate.llm
    row = {field: getattr(evaluation, field) for field in _EVALUATION_FIELDS}
    row.update(
        campaign=campaign, task=task.name, suite=task.suite, difficulty=task.difficulty,
        island=candidate.island, generation=candidate.generation,
        parent_ids=list(candidate.parents), operator=candidate.operator,
        lineage_debug_count=candidate.lineage_debug_count,
        source=candidate.source, strategy=candidate.strategy,
        llm_model=llm.model if llm else None, prompt_tokens=llm.prompt_tokens if llm else None,
        completion_tokens=llm.completion_tokens if llm else None,
        cost_usd=llm.cost_usd if llm else None, llm_latency_s=llm.latency_s if llm else None,
        reused=reused, seed=seed)
    for field in _LIST_FIELDS:
        row[field] = list(row[field])
    return row


def evaluation_from_row(row: dict) -> Evaluation:
    """Returns the Evaluation a row was written from (used to redo a generation exactly)."""
    values = {field: row[field] for field in _EVALUATION_FIELDS}
    for field in _LIST_FIELDS:
        values[field] = tuple(values[field] or ())
    return Evaluation(**values)


def llm_call_row(campaign: str, task: str, island: int, generation: int, call: dict) -> dict:
    """Returns the `llm_calls/` row of one call logged by an island's client."""
    row = {name: call.get(name) for name in LLM_CALL_SCHEMA.names}
    row.update(campaign=campaign, task=task, island=island, generation=generation)
    return row


def slug(task: str) -> str:
    """Returns `task` as a file-name piece: itself when it is plain, else its plain
    characters plus a hash, so two names never share a file."""
    plain = re.sub(r"[^A-Za-z0-9_.]", "_", task)
    if plain == task:
        return task
    return f"{plain}_{hashlib.sha1(task.encode()).hexdigest()[:8]}"


def part_path(folder: Path, generation: int, island: tuple[str, int]) -> Path:
    """Returns the part of `generation` of `island` ((task, island index))."""
    task, index = island
    return folder / f"part-{generation:05d}-{slug(task)}-i{index:03d}.parquet"


def write_part(folder: Path, generation: int, island: tuple[str, int], rows: list[dict],
               schema: pa.Schema) -> str:
    """Writes one island's rows of a generation as one part; returns "written", "kept" or
    "replaced".

    A part already there with the same rows is kept untouched (a redone generation of a
    resumed campaign); one with different rows is replaced atomically.
    """
    if not rows:
        return "kept"
    table = pa.Table.from_pylist(rows, schema=schema)
    path = part_path(folder, generation, island)
    outcome = "written"
    if path.exists():
        if pq.read_table(path, schema=schema).equals(table):
            return "kept"
        outcome = "replaced"
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    return outcome


def read_rows(folder: Path, generation: int, island: tuple[str, int]) -> list[dict]:
    """Returns the rows of one island's part of `generation`, [] if it was never written."""
    path = part_path(folder, generation, island)
    return pq.read_table(path).to_pylist() if path.exists() else []


def checkpointed_rows(folder: Path, done: dict[tuple[str, int], int], schema: pa.Schema,
                      columns: list[str]) -> list[dict]:
    """Returns `columns` of the rows of each island's parts of generations 0..`done[island]`
    (what its checkpoint covers: a part written after it is redone, not counted twice);
    null where an older part lacks a column."""
    files = [str(path) for key, generation in sorted(done.items())
             for path in (part_path(folder, g, key) for g in range(generation + 1))
             if path.exists()]
    if not files:
        return []
    return ds.dataset(files, schema=schema, format="parquet").to_table(columns=columns).to_pylist()


def atomic_write(path: Path, write) -> None:
    """Calls `write(tmp_path)`, then makes the file appear at `path` all at once, durably."""
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def remove_temporaries(folders: Iterable[Path]) -> None:
    """Removes half-written temporaries a killed run left behind."""
    for folder in folders:
        for tmp in folder.glob(".*.tmp"):
            tmp.unlink()


def write_json(path: Path, payload: dict) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(payload, indent=2, default=str)))


def set_campaign_field(folder: Path, key: str, value) -> None:
    """Sets one top-level field of `folder`'s campaign.json, the rest kept as written."""
    path = Path(folder) / "campaign.json"
    write_json(path, {**json.loads(path.read_text()), key: value})
