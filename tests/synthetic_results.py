"""Writes small, hand-computable results folders as the engine writes them: campaign.json and
real Parquet parts with the columns docs/interfaces.md pins. Used by the analysis, report
and sweep tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# The engine's own schemas: a synthetic folder can never drift from what campaigns write.
# Columns a row leaves out are written as nulls.
from evo.results import EVALUATION_SCHEMA, LLM_CALL_SCHEMA  # noqa: E402


def evaluation(task: str, island: int, generation: int, *, call_ok: bool, correct: bool = False,
               speedup: float | None = None, roofline: float | None = None,
               operator: str = "optimizer", difficulty: int = 1, meaningful: bool = True,
               reused: bool = False, gpu_s: float = 0.3) -> dict[str, Any]:
    """Returns one evaluations row; GPU time splits as compile 1/3, check 1/3, bench 1/3."""
    timed = correct and speedup is not None
    return {
        "campaign": "synthetic", "task": task, "suite": "builtin", "difficulty": difficulty,
        "island": island, "generation": generation,
        "candidate_id": f"{task}-{island}-{generation}-{operator}-{speedup}-{call_ok}",
        "parent_ids": [], "operator": operator, "source": "def f(): pass\n", "strategy": "",
        "stage_reached": "timed" if timed else ("correct" if correct else "run" if call_ok else "compile"),
        "call_ok": call_ok, "correct": correct,
        "failure_kind": None if correct else ("mismatch" if call_ok else "compile_error"),
        "error_trace": "", "case_names": ["N=1"], "latency_us": [10.0] if timed else [],
        "ref_latency_us": [10.0 * speedup] if timed else [], "max_abs_err": [0.0],
        "speedup": speedup if timed else None, "worst_speedup": speedup if timed else None,
        "roofline_fraction": roofline if timed else None, "timing_meaningful": meaningful,
        "backend": "cuda" if meaningful else "interpreter", "device": "test",
        "harness_version": "1", "compile_s": gpu_s / 3, "check_s": gpu_s / 3, "bench_s": gpu_s / 3,
        "llm_model": "m", "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
        "llm_latency_s": 0.0, "reused": reused, "seed": 0,
    }


def llm_call(task: str, island: int, generation: int, tokens: int, usd: float) -> dict[str, Any]:
    """Returns one llm_calls row; `tokens` splits 3/4 prompt, 1/4 completion."""
    return {"campaign": "synthetic", "task": task, "island": island, "generation": generation,
            "role": "optimizer", "model": "m", "request_hash": f"{task}{island}{generation}",
            "sample_index": 0, "prompt_tokens": tokens * 3 // 4,
            "completion_tokens": tokens - tokens * 3 // 4, "latency_s": 1.0, "cost_usd": usd,
            "success": True, "error": None, "response": "", "messages_json": "[]"}


def write_campaign(folder: Path, evaluations: list[dict], llm_calls: list[dict] = (),
                   islands: int = 3, migration_interval: int = 0, name: str = "synthetic",
                   tasks: tuple[str, ...] = (), difficulty: dict | None = None) -> Path:
    """Writes a campaign folder, one evaluations part per generation as the engine does
    (`difficulty`: campaign.json's task -> level, as the engine records it; None: none, as
    campaigns before it did)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"campaign": {"name": name, "tasks": list(tasks)}, "search": {"islands": islands,
                                                     "migration_interval": migration_interval}}
    meta = {"config": config, **({"difficulty": difficulty} if difficulty is not None else {})}
    (folder / "campaign.json").write_text(json.dumps(meta))
    for subfolder, rows, schema in (("evaluations", evaluations, EVALUATION_SCHEMA),
                                    ("llm_calls", llm_calls, LLM_CALL_SCHEMA)):
        (folder / subfolder).mkdir(exist_ok=True)
        for generation in sorted({r["generation"] for r in rows}):
            part = [r for r in rows if r["generation"] == generation]
            pq.write_table(pa.Table.from_pylist(part, schema=schema),
                           folder / subfolder / f"part-{generation:05d}.parquet")
    return folder


def example_campaign(folder: Path) -> Path:
    """The dataset the analysis tests compute by hand (3 islands, generations 0..2).

    add (difficulty 1): island 0 seeds a baseline (not counted), fails to run... then 1.5x at
      gen 1; island 1 mismatches at gen 1, 2.5x at gen 2; island 2 never runs.
      -> n=3, called 2, solved 2, 5 candidates, call rate 3/5, correct rate 2/5, best 2.5x.
    softmax (difficulty 2): island 0 correct 0.5x at gen 1 (interpreter timing); island 1
      mismatches; island 2 has no rows. -> n=3, called 2, solved 1, best 0.5x.
    matmul (difficulty 3): one compile failure at gen 0. -> n=3, called 0, solved 0.
    """
    rows = [
        evaluation("add", 0, 0, call_ok=True, correct=True, speedup=1.0, roofline=0.3, operator="seed"),
        evaluation("add", 0, 1, call_ok=True, correct=True, speedup=1.5, roofline=0.5),
        evaluation("add", 0, 2, call_ok=False, reused=True),
        evaluation("add", 1, 1, call_ok=True),
        evaluation("add", 1, 2, call_ok=True, correct=True, speedup=2.5, roofline=0.8),
        evaluation("add", 2, 1, call_ok=False, operator="reflector"),
        evaluation("softmax", 0, 1, call_ok=True, correct=True, speedup=0.5, roofline=0.1,
                   difficulty=2, meaningful=False),
        evaluation("softmax", 1, 2, call_ok=True, difficulty=2),
        evaluation("matmul", 0, 0, call_ok=False, operator="generator", difficulty=3),
    ]
    calls = [llm_call("add", 0, 0, 100, 0.01), llm_call("add", 0, 1, 200, 0.02),
             llm_call("softmax", 1, 2, 400, 0.04)]
    return write_campaign(folder, rows, calls)
