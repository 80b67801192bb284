"""What the LLM's candidates cost: tokens and US dollars per candidate and per correct one.

Every call counts (one that failed, or whose answer held no usable code, was paid for too),
and is divided among the candidates an LLM answer became (rows with an `llm_model`: a
reused row counts, it was made again): so the figure is what a candidate, and a correct
candidate, cost on average in this campaign. Seeds and offline operators' candidates cost
nothing and are left out. Dollars are at `operators.price_usd_per_mtok` as the calls were
booked (docs/columns.md, `cost_usd`).
"""

from __future__ import annotations

from typing import Any

from evo.analysis import metrics


def of(results: metrics.Results) -> dict[str, Any] | None:
    """Returns {"calls", "tokens", "usd", "candidates", "correct", "per_candidate",
    "per_correct"} (each "per_" a {"tokens", "usd"}, None when there is nothing to divide
    by), or None when no LLM was called."""
    calls = results.llm_calls
    if calls.empty:
        return None
    tokens = int(calls["prompt_tokens"].fillna(0).sum()
                 + calls["completion_tokens"].fillna(0).sum())
    usd = float(calls["cost_usd"].fillna(0.0).sum())
    rows = results.evaluations
    made = rows[rows["llm_model"].notna()] if "llm_model" in rows else rows.iloc[:0]
    candidates, correct = len(made), int(made["correct"].astype(bool).sum())

    def per(count: int) -> dict[str, float] | None:
        return {"tokens": tokens / count, "usd": usd / count} if count else None

    return {"calls": len(calls), "tokens": tokens, "usd": usd, "candidates": candidates,
            "correct": correct, "per_candidate": per(candidates), "per_correct": per(correct)}
