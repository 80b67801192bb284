"""The offline search against an exhaustive sweep of the same configuration space.

What it answers: the offline operators mutate and cross launch configurations and
constexpr block sizes, the space `@triton.autotune` would be given. How close does the
search's best get to the best of the whole space, and at what fraction of the evaluations?

For each task it enumerates `operators.offline.sweep` (every knob setting of the baseline;
a seeded uniform sample of `--max-configs` where the space is larger, said in the output),
scores every variant through the same `fitness.evaluator.Evaluator` a campaign uses, and
compares with a finished campaign's evaluations (`--campaign DIR`): its best speedup and
the number of evaluations it had made when it first reached it.

    python experiments/perf/exhaustive_bench.py --campaign results/offline-suite \
        [--tasks softmax,rmsnorm] [--max-configs 48] [--workers 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import random
import sys
import time

import pandas as pd

from benchmarks import registry
from evo.analysis import metrics as analysis
from evo.records import make_candidate
from fitness import Evaluator, Settings
from operators import offline


def configs(task, backend: str, max_configs: int, seed: int) -> tuple[list[dict], int]:
    """Returns (the settings to score, the size of the whole space)."""
    space = offline.knob_space(task, task.baseline_source, backend)
    size = math.prod(len(values) for values in space.values()) if space else 0
    settings = list(offline.sweep(task, task.baseline_source, backend))
    if len(settings) > max_configs:
        settings = random.Random(seed).sample(settings, max_configs)
    return settings, size


def sweep_task(evaluator: Evaluator, task, backend: str, max_configs: int, workers: int,
               seed: int) -> dict:
    settings, size = configs(task, backend, max_configs, seed)
    candidates = []
    for setting in settings:
        try:
            source = offline.apply_knobs(task, task.baseline_source, setting, backend)
        except ValueError:
            continue
        candidates.append(make_candidate(task.name, source, operator="sweep"))
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        evaluations = list(pool.map(lambda c: evaluator.evaluate(task, c), candidates))
    correct = [e for e in evaluations if e.correct and e.speedup]
    return {"task": task.name, "space": size, "scored": len(evaluations),
            "correct": len(correct), "best_speedup": max((e.speedup for e in correct), default=None),
            "sweep_s": time.perf_counter() - started}


def campaign_best(campaign_dir: str) -> dict[str, dict]:
    """Returns per task: best speedup and the evaluations made when it was first reached."""
    rows = analysis.load(campaign_dir).search_rows.sort_values(["task", "generation", "island"],
                                                               kind="stable")
    best: dict[str, dict] = {}
    for row in rows.itertuples():
        entry = best.setdefault(row.task, {"evaluations": 0, "best_speedup": None,
                                           "evaluations_to_best": 0})
        if not row.reused:
            entry["evaluations"] += 1
        speedup = None if pd.isna(row.speedup) else row.speedup
        if row.correct and speedup and (entry["best_speedup"] is None
                                        or speedup > entry["best_speedup"]):
            entry["best_speedup"] = speedup
            entry["evaluations_to_best"] = entry["evaluations"]
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", default="", help="a finished campaign's results folder")
    parser.add_argument("--tasks", default="", help="comma list (default: the campaign's tasks)")
    parser.add_argument("--max-configs", type=int, default=48)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    searched = campaign_best(args.campaign) if args.campaign else {}
    suite = registry.builtin()
    names = args.tasks.split(",") if args.tasks else sorted(searched) or [t.name for t in suite.tasks()]
    rows = []
    with Evaluator(Settings(device=args.device, workers=args.workers)) as evaluator:
        backend = evaluator.device.backend
        print(f"device: {evaluator.device.name} ({backend})")
        print("| task | space | swept | sweep best | search best | search evals to best | "
              "search/sweep | evals saved |")
        print("|---|---|---|---|---|---|---|---|")
        for name in names:
            row = sweep_task(evaluator, suite.get(name), backend, args.max_configs,
                             args.workers, args.seed)
            row.update({f"search_{k}": v for k, v in searched.get(name, {}).items()})
            rows.append(row)
            sweep_best, search_best = row["best_speedup"], row.get("search_best_speedup")
            ratio = (search_best / sweep_best) if sweep_best and search_best else None
            to_best = row.get("search_evaluations_to_best")
            saved = f"{row['scored'] / to_best:.1f}x" if to_best else "-"
            print(f"| {name} | {row['space']} | {row['scored']} | {_fmt(sweep_best)} | "
                  f"{_fmt(search_best)} | {to_best or '-'} | {_fmt(ratio)} | {saved} |", flush=True)
        print(f"evaluator: {evaluator.stats()}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    sys.exit(main())
