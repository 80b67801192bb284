"""The results folder: Parquet parts for evaluations and LLM calls, and campaign.json.

Parts are written one per generation (`part-00003.parquet` holds generation 3), atomically:
a hidden temporary file, fsync, rename. A reader (pandas, polars, DuckDB on the folder) never
sees half a part, and pyarrow skips the hidden temporaries. A part is never rewritten, except
when a resumed campaign redoes a generation that was written but not checkpointed and its
rows come out different (only possible with a live LLM); see `write_part`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from evo.records import Candidate, Evaluation, Task

_STRINGS = pa.list_(pa.string())
_DOUBLES = pa.list_(pa.float64())

EVALUATION_SCHEMA = pa.schema([
    ("campaign", pa.string()), ("task", pa.string()), ("suite", pa.string()),
    ("difficulty", pa.int64()), ("island", pa.int64()), ("generation", pa.int64()),
    ("candidate_id", pa.string()), ("parent_ids", _STRINGS), ("operator", pa.string()),
    ("lineage_debug_count", pa.int64()), ("source", pa.string()), ("strategy", pa.string()),
    ("stage_reached", pa.string()), ("call_ok", pa.bool_()), ("correct", pa.bool_()),
    ("failure_kind", pa.string()), ("error_trace", pa.string()), ("case_names", _STRINGS),
    ("latency_us", _DOUBLES), ("ref_latency_us", _DOUBLES), ("max_abs_err", _DOUBLES),
    ("rel_err", _DOUBLES), ("speedup", pa.float64()), ("worst_speedup", pa.float64()),
    ("roofline_fraction", pa.float64()), ("timing_meaningful", pa.bool_()),
    ("backend", pa.string()), ("device", pa.string()), ("harness_version", pa.string()),
    ("compile_s", pa.float64()), ("check_s", pa.float64()), ("bench_s", pa.float64()),
    ("llm_model", pa.string()), ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()), ("cost_usd", pa.float64()),
    ("llm_latency_s", pa.float64()), ("reused", pa.bool_()), ("seed", pa.int64()),
])
"""One row per evaluated offspring (docs/interfaces.md lists what readers rely on)."""

LLM_CALL_SCHEMA = pa.schema([
    ("campaign", pa.string()), ("task", pa.string()), ("island", pa.int64()),
    ("generation", pa.int64()), ("role", pa.string()), ("model", pa.string()),
    ("request_hash", pa.string()), ("sample_index", pa.int64()),
    ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
    ("latency_s", pa.float64()), ("cost_usd", pa.float64()), ("success", pa.bool_()),
    ("error", pa.string()), ("response", pa.string()), ("attempts", pa.int64()),
    ("messages_json", pa.string()),
])
"""One row per LLM call, as `LLMClient.drain_calls` hands them over plus where they came from."""

_EVALUATION_FIELDS = [field.name for field in dataclasses.fields(Evaluation)]


def evaluation_row(campaign: str, task: Task, candidate: Candidate, evaluation: Evaluation,
                   reused: bool, seed: int) -> dict:
    """Returns the `evaluations/` row of one scored offspring."""
    llm = candidate.llm
    row = {field: getattr(evaluation, field) for field in _EVALUATION_FIELDS}
    row.update(
        campaign=campaign, task=task.name, suite=task.suite, difficulty=task.difficulty,
        island=candidate.island, generation=candidate.generation, parent_ids=list(candidate.parents),
        operator=candidate.operator, lineage_debug_count=candidate.lineage_debug_count,
        source=candidate.source, strategy=candidate.strategy,
        llm_model=llm.model if llm else None, prompt_tokens=llm.prompt_tokens if llm else None,
        completion_tokens=llm.completion_tokens if llm else None,
        cost_usd=llm.cost_usd if llm else None, llm_latency_s=llm.latency_s if llm else None,
        reused=reused, seed=seed)
    for field in ("case_names", "latency_us", "ref_latency_us", "max_abs_err", "rel_err"):
        row[field] = list(row[field])
    return row


def evaluation_from_row(row: dict) -> Evaluation:
    """Returns the Evaluation a row was written from (used to redo a generation exactly)."""
    values = {field: row[field] for field in _EVALUATION_FIELDS}
    for field in ("case_names", "latency_us", "ref_latency_us", "max_abs_err", "rel_err"):
        values[field] = tuple(values[field] or ())
    return Evaluation(**values)


def llm_call_row(campaign: str, task: str, island: int, generation: int, call: dict) -> dict:
    """Returns the `llm_calls/` row of one call logged by an island's client."""
    row = {name: call.get(name) for name in LLM_CALL_SCHEMA.names}
    row.update(campaign=campaign, task=task, island=island, generation=generation)
    return row


def part_path(folder: Path, generation: int) -> Path:
    return folder / f"part-{generation:05d}.parquet"


def write_part(folder: Path, generation: int, rows: list[dict], schema: pa.Schema) -> str:
    """Writes the generation's rows as one part; returns "written", "kept" or "replaced".

    A part already there with the same rows is kept untouched (a redone generation of a
    resumed campaign); one with different rows is replaced atomically.
    """
    if not rows:
        return "kept"
    table = pa.Table.from_pylist(rows, schema=schema)
    path = part_path(folder, generation)
    outcome = "written"
    if path.exists():
        if pq.read_table(path, schema=schema).equals(table):
            return "kept"
        outcome = "replaced"
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    return outcome


def read_rows(folder: Path, generation: int) -> list[dict]:
    """Returns the rows of one part, [] if it was never written."""
    path = part_path(folder, generation)
    return pq.read_table(path).to_pylist() if path.exists() else []


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
