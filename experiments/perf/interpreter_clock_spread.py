"""How far the interpreter judge's CPU-time latency scatters between copies of one file: the
compromised suite's honest vector_add scored as N copies, two at a time, on one interpreter
Evaluator with two workers (as tests/test_compromised_worker.py scores its cheats), then
max/min per case over the copies. The suite's bound on a cheat against its twin (1.5x) holds
only while this stays well under it.

    TRITON_INTERPRET=1 python experiments/perf/interpreter_clock_spread.py --copies 10
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import compromised  # noqa: E402
from fitness import Evaluator, Settings  # noqa: E402
from fitness_limits import FITNESS_TEST_LIMITS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    path = compromised.DIR / "honest_vector_add.py"
    settings = Settings(device="interpreter", workers=args.workers, timeouts=FITNESS_TEST_LIMITS,
                        static_gate=False)
    with Evaluator(settings) as evaluator, concurrent.futures.ThreadPoolExecutor(2) as pool:
        scored = list(pool.map(lambda i: compromised.scored(evaluator, path, f"copy {i}"),
                               range(args.copies)))
    for evaluation in scored:
        print("latency_us", [round(x) if x else None for x in evaluation.latency_us])
    for case in range(len(scored[0].latency_us)):
        values = [e.latency_us[case] for e in scored if e.latency_us[case]]
        print(f"case {case}: {len(values)} timed, min {min(values):.0f} median "
              f"{statistics.median(values):.0f} max {max(values):.0f} us, max/min "
              f"{max(values) / min(values):.2f}")


if __name__ == "__main__":
    main()
