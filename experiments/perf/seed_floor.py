"""Prints, per task of a campaign folder, its generation-0 (seed) rows and the best against
its correct seed: the check that the seeds are recorded and no best is below them.

    python3 experiments/perf/seed_floor.py RESULTS_DIR [--json OUT]

Exit status 1 if a task has no generation-0 row or its best is below its correct seed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evo.analysis import metrics  # noqa: E402


def seed_floor(results: metrics.Results) -> list[dict]:
    """Returns one dict per task: rows, fresh rows, generation-0 rows, the seed's and the
    best comparable speedup, and whether the best stands at or above the seed."""
    rows = metrics.comparable_speedups(results.evaluations)
    table = []
    for task, of_task in rows.groupby("task"):
        seeds = of_task[(of_task.generation == 0) & of_task.correct]
        best_seed = seeds.speedup.max() if len(seeds) else None
        best = of_task[of_task.correct].speedup.max()
        table.append({"task": task, "rows": len(of_task), "fresh": int((~of_task.reused).sum()),
                      "generation_0": int((of_task.generation == 0).sum()),
                      "correct": float(of_task.correct.mean()),
                      "seed_speedup": best_seed, "best_speedup": best,
                      "floor_holds": best_seed is None or best >= best_seed})
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    table = seed_floor(metrics.load(args.results))
    print("| task | rows | fresh | gen-0 rows | correct | seed speedup | best speedup | best >= seed |")
    print("|---|---|---|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(str(round(v, 3)) if isinstance(v, float) else str(v)
                                for v in row.values()) + " |")
    if args.json:
        args.json.write_text(json.dumps(table, default=str))
    return 0 if all(r["generation_0"] and r["floor_holds"] for r in table) else 1


if __name__ == "__main__":
    sys.exit(main())
