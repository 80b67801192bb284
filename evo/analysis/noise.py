"""How far timing alone moves a speedup: the seed's own spread, the noise band.

A seed (generation 0, operator "seed") is the task's baseline kernel scored against the
baseline itself: its true speedup is 1.0, so every ratio it reads (per case, per seed row,
per campaign of a sweep) away from 1.0 is the timer's noise. Under Triton's CPU interpreter
that spread is wide (softmax against itself read 0.38x-1.08x), on a GPU a few percent. A
speedup inside it is not shown to beat the seed; readers draw the band and say so.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from evo.analysis.metrics import SEED_OPERATOR

INTERPRETER_CAVEAT = "interpreter timing: speedups not meaningful"


@dataclasses.dataclass(frozen=True)
class Band:
    """The lowest and highest speedup a seed read against its own baseline, over `readings`
    ratios (each case of each seed row, and each row's geomean)."""

    low: float
    high: float
    readings: int

    def holds(self, speedup: float) -> bool:
        """Returns True when `speedup` is no further from the seed than its own spread."""
        return speedup <= self.high

    def range_text(self) -> str:
        return f"{self.low:.2f}x-{self.high:.2f}x"

    def text(self) -> str:
        """Returns "the seed (the baseline against itself) read 0.69x-3.21x (12 readings)"."""
        return (f"the seed (the baseline against itself) read {self.range_text()} "
                f"({self.readings} readings)")


def _ratios(row: pd.Series) -> list[float]:
    """Returns a seed row's speedup and its per-case ratios (baseline / seed latency)."""
    found = [float(row["speedup"])] if pd.notna(row["speedup"]) else []
    latencies, references = row.get("latency_us"), row.get("ref_latency_us")
    if latencies is not None and references is not None and len(latencies) == len(references):
        pairs = np.array([references, latencies], dtype=float)
        if pairs.size and np.isfinite(pairs).all() and (pairs > 0).all():
            found += list(pairs[0] / pairs[1])
    return found


def seed_bands(evaluations: pd.DataFrame) -> dict[str, Band]:
    """Returns task -> its seeds' band, for tasks with a correct timed seed row (repeats of
    one verdict count once)."""
    if evaluations.empty:
        return {}
    seeds = evaluations[(evaluations["operator"] == SEED_OPERATOR)
                        & evaluations["correct"].astype(bool)]
    if "reused" in seeds:
        seeds = seeds[~seeds["reused"].fillna(False).astype(bool)]
    bands = {}
    for task, rows in seeds.groupby("task", sort=True):
        ratios = [r for _, row in rows.iterrows() for r in _ratios(row)]
        if ratios:
            bands[str(task)] = Band(min(ratios), max(ratios), len(ratios))
    return bands


def suite_band(bands: dict[str, Band]) -> Band | None:
    """Returns the band of a suite's speedup geomean: the geomeans of the tasks' lows and
    highs (None without any band)."""
    if not bands:
        return None
    lows, highs = (np.array([getattr(b, side) for b in bands.values()]) for side in ("low", "high"))
    return Band(float(np.exp(np.log(lows).mean())), float(np.exp(np.log(highs).mean())),
                sum(b.readings for b in bands.values()))


def rising_best_note(band: tuple[float, float] | list[float] | None) -> str:
    """Returns the note every best-speedup-against-compute trend carries: a best is the
    highest of its readings, and more compute makes more readings, so with nothing found it
    still rises, up the seed's own spread (`band`, the suite's [low, high])."""
    spread = ("" if band is None else
              f", as the seed against itself read {band[0]:.2f}x-{band[1]:.2f}x")
    return ("a best speedup is the highest of its readings: more compute, more readings, a "
            f"higher best even when nothing got faster{spread}; a rise inside that spread is "
            "noise")


def meaningless(evaluations: pd.DataFrame) -> bool:
    """Returns True when the rows were timed, and none meaningfully (the interpreter)."""
    timed = evaluations.loc[evaluations["speedup"].notna(), "timing_meaningful"]
    return bool(len(timed)) and not timed.astype(bool).any()


def notes(evaluations: pd.DataFrame) -> list[str]:
    """Returns the lines every surface prints beside a speedup of these rows: the caveat on
    the interpreter, and each task's seed band."""
    lines = [f"{INTERPRETER_CAVEAT} (no best by speed: ranked by correctness)"
             ] if meaningless(evaluations) else []
    return lines + [f"noise band of {task}: {band.text()}; a speedup inside it is noise"
                    for task, band in seed_bands(evaluations).items()]
