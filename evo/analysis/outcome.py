"""How a campaign's last run ended and what its LLM calls failed with, as `evo report` shows it.

A campaign stopped early (its LLM calls kept failing, a cap, a signal, a fatal cause) may
hold no evaluation at all; its report still says what happened: the stop campaign.json
records (evo.ending) and the failed calls of `llm_calls/` by `failure_kind`, each kind with
its count and its latest error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import metrics, parts
from evo.run_log import LOG_NAME

CALL_COLUMNS = ["failure_kind", "error", "finished_at"]


def has_evaluations(folder: Path) -> bool:
    """Returns True if the campaign in `folder` wrote any evaluation part (never empty)."""
    return bool(parts.listing(Path(folder) / "evaluations"))


def llm_failures(calls: pd.DataFrame) -> dict[str, Any]:
    """Returns {"calls", "failed", "kinds": {kind: {"calls", "example"}}}: the commonest kind
    first, its example the error of its last call to finish (the kind itself if it has none)."""
    calls = calls.reindex(columns=CALL_COLUMNS)  # null where no part has the column
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
    if calls is None:
        calls = parts.frame(parts.PartReader().read(Path(folder) / "llm_calls", tuple(CALL_COLUMNS),
                                                    strict=True).table)
    return {"stop": stop, "llm": llm_failures(calls), "notes": notes}


def without_evaluations(folder: Path) -> dict[str, Any]:
    """Returns the report of a campaign that holds no evaluation: what ended it, and why
    its LLM calls gave nothing to score. Raises ValueError for an unreadable campaign.json."""
    meta = metrics.read_meta(Path(folder))
    ended = outcome(folder, meta)
    return {"campaign": metrics.campaign_name(meta, Path(folder)), "path": str(folder),
            "evaluations": 0, "stop": ended["stop"], "llm": ended["llm"],
            "notes": ended["notes"], "figures": []}
