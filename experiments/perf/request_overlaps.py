"""Which judge requests ran beside each candidate timing, and how slow that timing came out.

Reads request logs of a mixed batch (`fitness_bench.py`), one line per judge request:

    DIAGA <wall start> <wall end> <role.op> <task> w<walk> p<process> [<bench medians, us>]

(written by a trial patch of `_Walk._request` that printed each request's interval to stderr;
the logs of RESULTS §6l are in `logs/2026-11-24-twelfth/requests_*.log.gz`). For every
`candidate.bench` whose first case (the representative one, timed first) took at least 20 us,
it takes how much slower that case came out than the fastest copy of the same task in the batch
(the batch times 4 copies of each correct kernel), and whether a checker's `reset` (which hands
device memory back) overlapped it. Prints, per log, the count, median and max slowness with and
without such an overlap, and the slowest timings.

    python3 experiments/perf/request_overlaps.py experiments/perf/logs/2026-11-24-twelfth/requests_*.log.gz
"""

from __future__ import annotations

import ast
import gzip
import re
import statistics
import sys
from typing import NamedTuple

LINE = re.compile(r"DIAGA (\S+) (\S+) (\S+) (\S+) (w\d+) (p\d+)\s*(.*)")


class Request(NamedTuple):
    start: float
    end: float
    name: str
    task: str
    medians_us: list


def read(path: str) -> list[Request]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as lines:
        matches = (LINE.match(line.strip()) for line in lines)
        return [Request(float(m[1]), float(m[2]), m[3], m[4],
                        ast.literal_eval(m[7]) if m[7].startswith("[") else [])
                for m in matches if m]


def slowness(requests: list[Request], above_us: float = 20.0) -> list[tuple[float, bool, str]]:
    """Returns (first case's slowness against the task's fastest copy, reset overlapped, task)
    for each candidate timing whose first case took at least `above_us`."""
    benches = [r for r in requests if r.name == "candidate.bench" and r.medians_us]
    fastest: dict[str, float] = {}
    for bench in benches:
        fastest[bench.task] = min(fastest.get(bench.task, float("inf")), bench.medians_us[0])
    resets = [r for r in requests if r.name == "checker.reset"]
    return [(bench.medians_us[0] / fastest[bench.task] - 1.0,
             any(r.start < bench.end and r.end > bench.start for r in resets), bench.task)
            for bench in benches if bench.medians_us[0] >= above_us]


def _summary(label: str, values: list[float]) -> str:
    if not values:
        return f"{label}: none"
    return (f"{label}: {len(values)}, median {100 * statistics.median(values):.1f}%, "
            f"max {100 * max(values):.1f}%, over 5%: {sum(v > 0.05 for v in values)}")


def main(paths: list[str]) -> None:
    for path in paths:
        timings = slowness(read(path))
        print(path)
        print("  " + _summary("beside a reset", [s for s, reset, _ in timings if reset]))
        print("  " + _summary("no reset beside", [s for s, reset, _ in timings if not reset]))
        for slow, reset, task in sorted(timings, reverse=True)[:3]:
            print(f"    {100 * slow:5.1f}% {task}{' (reset beside)' if reset else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
