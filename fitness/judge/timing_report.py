"""Timings turned into speedups, and the timings an external suite's harness reports checked.

A built-in task's latencies come from the judge's clock (`fitness.judge.clock`). An external
suite's harness still times its candidate in the worker (not yet on the judge's clock):
its numbers are accepted only when well formed (positive, finite, p20 <= median <= p80, at
least one run, a known stop reason when one is given) and when the timed work they claim
fits inside the wall time the trusted side saw for the request. The roofline bound is
`anticheat.implausible`.
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


def speedup_fields(latency: list[dict | None], reference: list[dict], total: bool = False) -> dict:
    """Returns the Evaluation's timing fields from per-case candidate and reference stats:
    the speedup is the geometric mean, over every case, of reference / candidate median
    (`total`: GEAK-eval's TritonBench-revised speedup instead, the reference's summed medians
    over the candidate's); the worst is the lowest case's ratio either way. A case not timed
    (None: a clear loser on another case) keeps None latencies and makes both speedups None,
    so no speedup is ever over fewer cases than another's."""
    def column(key: str) -> tuple:
        return tuple(None if s is None else s[key] for s in latency)

    fields = dict(latency_us=column("median_us"), latency_p20_us=column("p20_us"),
                  latency_p80_us=column("p80_us"),
                  ref_latency_us=tuple(s["median_us"] for s in reference),
                  speedup=None, worst_speedup=None)
    if latency and all(s is not None for s in latency):
        ratios = [ref["median_us"] / max(lat["median_us"], 1e-9)
                  for lat, ref in zip(latency, reference)]
        if total:
            speedup = (sum(ref["median_us"] for ref in reference)
                       / max(sum(lat["median_us"] for lat in latency), 1e-9))
        else:
            speedup = math.exp(sum(map(math.log, ratios)) / len(ratios))
        fields.update(speedup=speedup, worst_speedup=min(ratios))
    return fields
