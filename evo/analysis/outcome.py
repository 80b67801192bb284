"""How a campaign's last run ended and what its LLM calls failed with, as `evo report` shows it.

A campaign stopped early (its LLM calls kept failing, a cap, a signal, a fatal cause) may
hold no evaluation at all; its report still says what happened: the stop campaign.json
records (evo.ending) and the failed calls of `llm_calls/` by `failure_kind`, each kind with
its count and its latest error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.dataset as ds

from evo import results
from evo.run_log import LOG_NAME

CALL_COLUMNS = ["failure_kind", "error", "finished_at"]


def has_evaluations(folder: Path) -> bool:
    """Returns True if the campaign in `folder` wrote any evaluation part (never empty)."""
    return any((Path(folder) / "evaluations").glob("part-*.parquet"))


def llm_calls(folder: Path) -> pd.DataFrame:
    """Returns `CALL_COLUMNS` of every LLM call row (null where an older part lacks one)."""
    parts = sorted((Path(folder) / "llm_calls").glob("part-*.parquet"))
    if not parts:
        return pd.DataFrame(columns=CALL_COLUMNS)
    dataset = ds.dataset(parts, schema=results.LLM_CALL_SCHEMA, format="parquet")
    return dataset.to_table(columns=CALL_COLUMNS).to_pandas()


def llm_failures(calls: pd.DataFrame) -> dict[str, Any]:
    """Returns {"calls", "failed", "kinds": {kind: {"calls", "example"}}}: the commonest kind
    first, its example the error of its last call to finish (the kind itself if it has none)."""
    failed = calls[calls["failure_kind"].notna()].sort_values("finished_at", na_position="first",
                                                            kind="stable")
    kinds = {}
    counts = failed["failure_kind"].value_counts()
    for kind, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        error = failed.loc[failed["failure_kind"] == kind, "error"].iloc[-1]
        has_words = isinstance(error, str) and error.strip()
        kinds[str(kind)] = {"calls": int(count), "example": error if has_words else str(kind)}
    return {"calls": len(calls), "failed": len(failed), "kinds": kinds}


def outcome(folder: Path, meta: dict, calls: pd.DataFrame | None = None) -> dict[str, Any]:
    """Returns the recorded stop (None if none), the LLM failures, and a note when no
    stop is recorded. `calls`: the folder's LLM call rows when already read."""
    stop = meta.get("stop")
    notes = []
    if stop is None:
        log = Path(folder) / LOG_NAME
        notes.append("campaign.json records no end of a run: it is still running, or it was "
                     "killed" + (f" or crashed (see {log})" if log.is_file() else ""))
    calls = llm_calls(folder) if calls is None else calls.reindex(columns=CALL_COLUMNS)
    return {"stop": stop, "llm": llm_failures(calls), "notes": notes}


def without_evaluations(folder: Path) -> dict[str, Any]:
    """Returns the report of a campaign that holds no evaluation: what ended it, and why
    its LLM calls gave nothing to score. Raises ValueError for an unreadable campaign.json."""
    meta_path = Path(folder) / "campaign.json"
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{meta_path}: not valid JSON ({error})") from error
    name = (meta.get("config", {}).get("campaign") or {}).get("name") or Path(folder).name
    ended = outcome(folder, meta)
    return {"campaign": name, "path": str(folder), "evaluations": 0, "stop": ended["stop"],
            "llm": ended["llm"], "notes": ended["notes"], "figures": []}
