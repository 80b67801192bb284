"""The best candidate of each task, and how it was chosen: what `evo report` names and
`evo export` writes out.

Where timing means something (rows with `timing_meaningful`, a GPU), the best is the
fastest correct candidate timed on every case (its `speedup`, comparable only over the same
cases: evo.analysis.metrics.comparable_speedups). Where it does not (Triton's CPU
interpreter), speed crowns no one: the interpreter's latencies swing by 3x between two runs
of one kernel. Then candidates are ranked by correctness alone and the best is the correct
candidate of the highest generation (the furthest the search carried a working kernel; its
speed is unknown until it is timed on a GPU), and the choice says so. A fastest whose
speedup lies inside its seed's own spread (evo.analysis.noise) is still named, and the
choice says it may be noise.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from evo.analysis import metrics, noise
from evo.analysis.speedup_cells import NOT_MEANINGFUL

BY_SPEEDUP = "speedup"
BY_CORRECTNESS = "correctness"

INTERPRETER_NOTE = "by correctness; timing not meaningful here"
UNTIMED_NOTE = "by correctness; no correct candidate was timed on every case"


def best_candidates(evaluations: pd.DataFrame) -> dict[str, dict[str, Any] | None]:
    """Returns task -> its best candidate (None: no correct candidate), as a dict with
    candidate_id, generation, island, operator, speedup (None when ranked by correctness),
    ranked_by (BY_SPEEDUP | BY_CORRECTNESS), ranking (the words a reader sees), noise_band
    ([low, high] the task's seed read, or None) and, for a sweep's rows, its cell."""
    chosen: dict[str, dict[str, Any] | None] = {}
    bands = noise.seed_bands(evaluations)
    for task, rows in evaluations.groupby("task", sort=True):
        chosen[str(task)] = _best_of(rows, bands.get(str(task)))
    return chosen


def _best_of(rows: pd.DataFrame, band: noise.Band | None) -> dict[str, Any] | None:
    correct = rows[rows["correct"].astype(bool)]
    if correct.empty:
        return None
    timed = correct[correct["speedup"].notna() & correct["timing_meaningful"].astype(bool)]
    if len(timed):
        # fastest; among equals the earliest (generation, island), as found
        order = timed.assign(_negative=-timed["speedup"]).sort_values(
            ["_negative", "generation", "island"], kind="stable")
        fastest = order.iloc[0]
        ranking = "by speedup (fastest correct)"
        if band is not None and band.holds(float(fastest["speedup"])):
            ranking += f"; inside the seed's own spread {band.range_text()}: may be noise"
        return _described(fastest, BY_SPEEDUP, ranking, band)
    meaningless = not correct["timing_meaningful"].astype(bool).any()
    order = correct.sort_values(["generation", "island"], ascending=[False, True],
                                kind="stable")
    return _described(order.iloc[0], BY_CORRECTNESS,
                      INTERPRETER_NOTE if meaningless else UNTIMED_NOTE, band)


def _described(row: pd.Series, ranked_by: str, ranking: str,
               band: noise.Band | None) -> dict[str, Any]:
    return {
        "candidate_id": str(row["candidate_id"]),
        "generation": int(row["generation"]),
        "island": int(row["island"]),
        "operator": str(row["operator"]),
        "speedup": float(row["speedup"]) if ranked_by == BY_SPEEDUP else None,
        "backend": str(row["backend"]) if "backend" in row and pd.notna(row["backend"]) else "",
        "ranked_by": ranked_by,
        "ranking": ranking,
        "noise_band": None if band is None else [band.low, band.high],
        **({"cell": str(row["cell"])} if "cell" in row else {}),
    }


def speedup_text(best: dict[str, Any]) -> str:
    """Returns "2.31x", or "n/a (interpreter)" / "n/a (not timed)" for a choice made by
    correctness."""
    if best["ranked_by"] == BY_SPEEDUP:
        return f"{best['speedup']:.2f}x"
    return NOT_MEANINGFUL if best["ranking"] == INTERPRETER_NOTE else "n/a (not timed)"


def of_results(results: metrics.Results) -> dict[str, dict[str, Any] | None]:
    """Returns `best_candidates` of a campaign's rows, every task of it named (None: no
    correct candidate, or no row at all)."""
    found = best_candidates(results.evaluations)
    return {task: found.get(task) for task in results.task_names}
