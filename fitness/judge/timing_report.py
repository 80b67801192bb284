"""Timings reported from a sandbox, checked before they are believed, and turned into speedups.

A worker times the candidate in its own process, with events the candidate's process owns:
its numbers are evidence. They are accepted only when well formed (positive, finite,
p20 <= median <= p80, at least one run, a known stop reason when one is given) and when the
timed work they claim fits inside the wall time the trusted side saw for the request. The
roofline bound is `anticheat.implausible`.
"""

from __future__ import annotations

import math

from fitness.measure.timing import STOP_REASONS


class ForgedTiming(ValueError):
    """A timing report that is malformed or claims more than the wall clock allows."""


def checked(reports: dict, wall_s: float) -> dict[str, dict]:
    """Returns {case: {"median_us", "p20_us", "p80_us", "runs"[, "stopped"]}} from `reports`,
    or raises ForgedTiming naming the case and what is wrong. "stopped" (why the worker
    stopped timing, one of `fitness.measure.timing.STOP_REASONS`) is passed on when reported."""
    stats = {}
    for name, result in reports.items():
        try:
            case = {key: float(result[key]) for key in ("median_us", "p20_us", "p80_us")}
            runs = int(result["runs"])
        except (KeyError, TypeError, ValueError):
            raise ForgedTiming(f"case {name!r}: malformed timing report {str(result)[:200]}") from None
        if not (runs >= 1 and all(math.isfinite(v) and v > 0 for v in case.values())
                and case["p20_us"] <= case["median_us"] <= case["p80_us"]):
            raise ForgedTiming(f"case {name!r}: inconsistent timing report {str(result)[:200]}")
        stopped = result.get("stopped")
        if stopped is not None and stopped not in STOP_REASONS:
            raise ForgedTiming(f"case {name!r}: unknown stop reason {str(stopped)[:40]!r}; "
                               f"known: {', '.join(STOP_REASONS)}")
        stats[name] = {**case, "runs": runs}
        if stopped is not None:
            stats[name]["stopped"] = stopped
    claimed_s = sum(case["runs"] * case["p20_us"] for case in stats.values()) * 1e-6
    if claimed_s > wall_s:
        raise ForgedTiming(f"the report claims {claimed_s:.3f} s of timed runs inside a request "
                           f"that took {wall_s:.3f} s of wall time")
    return stats


BATCH_TRANSIT_US = 1000.0
"""Microseconds of a judged batch's request that are transit (the round trip, the worker's
reading and replying), taken off before the runs are counted."""

FLOOR_MARGIN = 0.9
"""A median is raised to this share of the judge's floor, never more: the floor is measured
with the baseline's overheads, and an honest candidate is not to pay for their noise."""


def floor_us(wall_s: float, runs: int, baseline: dict) -> float | None:
    """Returns the least a run of a candidate can have taken by the judge's own clock: its
    judged batch's wall time (`wall_s`, `runs` runs), less the transit, per run, less what
    a baseline run costs beside its median in such a batch (`baseline["batch_us"]`). None
    where the baseline has no batch (timing not meaningful)."""
    batch_us = baseline.get("batch_us")
    if not batch_us or runs < 1:
        return None
    overhead_us = max(0.0, batch_us - baseline["median_us"])
    return (wall_s * 1e6 - BATCH_TRANSIT_US) / runs - overhead_us


def judged(report: dict, floor: float | None) -> dict:
    """Returns `report` with its latencies raised to `FLOOR_MARGIN` of the judge's floor where
    they claim less (the worker's own timing says faster than its runs took by the judge's
    clock), and the floor noted; as it is otherwise."""
    if floor is None:
        return report
    least = FLOOR_MARGIN * floor
    if report["median_us"] >= least:
        return {**report, "floor_us": floor}
    scale = least / report["median_us"]
    return {**report, "median_us": least, "p20_us": report["p20_us"] * scale,
            "p80_us": report["p80_us"] * scale, "floor_us": floor, "floored": True}


def check_clear_loser(report: dict, give_up_us: float) -> None:
    """Raises ForgedTiming unless `report` (a checked case, the only one a worker timed)
    shows a clear loser: stopped as "slower" with a median above `give_up_us`."""
    if report.get("stopped") != "slower" or not report["median_us"] > give_up_us:
        raise ForgedTiming(f"the worker timed one case only, but its median "
                           f"{report['median_us']:.4g} us (stopped: {report.get('stopped')}) "
                           f"does not make it a clear loser above {give_up_us:.4g} us")


def speedup_fields(latency: list[dict | None], reference: list[dict]) -> dict:
    """Returns the Evaluation's timing fields from per-case candidate and reference stats:
    the speedup is the geometric mean, over every case, of reference / candidate median. A
    case not timed (None: a clear loser on another case) keeps None latencies and makes
    both speedups None, so no speedup is ever over fewer cases than another's."""
    def column(key: str) -> tuple:
        return tuple(None if s is None else s[key] for s in latency)

    fields = dict(latency_us=column("median_us"), latency_p20_us=column("p20_us"),
                  latency_p80_us=column("p80_us"),
                  ref_latency_us=tuple(s["median_us"] for s in reference),
                  speedup=None, worst_speedup=None)
    if latency and all(s is not None for s in latency):
        ratios = [ref["median_us"] / max(lat["median_us"], 1e-9)
                  for lat, ref in zip(latency, reference)]
        fields.update(speedup=math.exp(sum(map(math.log, ratios)) / len(ratios)),
                      worst_speedup=min(ratios))
    return fields
