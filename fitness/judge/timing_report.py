"""Timings turned into speedups. Every latency comes from the judge's clock
(`fitness.judge.clock`), external suites' included (`fitness.judge.performance_inputs`); the
roofline bound is `anticheat.implausible`.
"""

from __future__ import annotations

import math


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
