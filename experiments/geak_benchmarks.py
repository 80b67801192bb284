"""GEAK's tables on GEAK's own benchmarks, from one command: TritonBench-revised and ROCm from
a GEAK-eval checkout, searched and reported in the layout of the GEAK paper's Tables 2, 5, 6.

  python3 experiments/geak_benchmarks.py --path GEAK-eval --generations A.jsonl B.jsonl \\
      --out results/geak [--tasks-per-level N] [--minutes 20]

Steps, each a campaign of its own under OUT (`evo run`, so each is a results folder that
`evo report` and `evo view` read), then the tables:
1. direct prompting (Table 2): for each recorded-generations file (TritonBench's
   `{instruction, predict, label}` rows of one model, `[operators] generations_from`), the
   model's one reply per TritonBench-revised task scored as generation 0, nothing else;
2. the offline arm (Tables 5 and 6): every runnable task of both suites seeded from its
   reference, then `--search-generations` generations of knob mutation and crossover on
   `--islands` independent islands (`migration_interval = 0`: GEAK's parallel runs);
3. the tables and figures (`evo.analysis.geak_tables`) in OUT/tables, by difficulty too.
`--minutes` is split between the steps as each campaign's `max_wall_seconds` (direct
prompting a fifth, the search the rest); a campaign cut short by it is reported as far as it
went. It bounds the generations, not the seeds: every task's seeds are scored whatever the
budget (a resume starts there), so a run over many tasks takes at least their seeding (on
the H200, 13 TritonBench-revised tasks seeded in about 340 s with 14 workers: RESULTS.md §19). `--tasks-per-level N` keeps the first N tasks of
each difficulty level of each suite (by name), for a run smaller than the whole benchmark.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import registry  # noqa: E402
from operators import recorded_generations  # noqa: E402

SUITES = ("tritonbench-revised", "rocm")
DIRECT_SHARE = 0.2
"""Of `--minutes`, the direct-prompting campaigns' share (their replies are mostly untimed)."""


def runnable_tasks(path: str, suites: list[str], device: str, per_level: int | None) -> dict[str, list[str]]:
    """Returns {suite: task names} that run on `device`, the first `per_level` of each
    difficulty level (by name) when given."""
    chosen = {}
    for suite in suites:
        tasks = sorted((task for task in registry.load(suite, path).tasks() if device in task.runnable_on),
                       key=lambda task: (task.difficulty, task.name))
        if per_level is not None:
            levels: dict[int, list] = {}
            for task in tasks:
                levels.setdefault(task.difficulty, []).append(task)
            tasks = [task for level in levels.values() for task in level[:per_level]]
        chosen[suite] = [task.name for task in tasks]
    return chosen


def _toml(value) -> str:
    return json.dumps(value)  # a JSON string, number, bool or list of strings is valid TOML


def campaign_config(name: str, suite: str, path: str, tasks: list[str], search: dict,
                    operators: dict, args: argparse.Namespace, wall_s: float,
                    seed_with_baseline: bool) -> str:
    """Returns a campaign's TOML."""
    sections = {
        "campaign": {"name": name, "suite": suite, "path": str(pathlib.Path(path).resolve()),
                     "tasks": tasks, "seed": 0, "seed_with_baseline": seed_with_baseline},
        "search": {"population": 2, "migration_interval": 0, **search},
        "operators": {"mode": "offline", **operators},
        "fitness": {"device": args.device, "workers": args.workers},
        "budget": {"max_wall_seconds": round(wall_s)},
    }
    return "".join(f"[{section}]\n" + "".join(f"{key} = {_toml(value)}\n" for key, value in keys.items()) + "\n"
                   for section, keys in sections.items())


def run_campaign(out: pathlib.Path, name: str, config: str) -> pathlib.Path:
    """Writes the config beside the results and runs `evo run` on it; returns its folder."""
    folder = out / name
    config_path = out / f"{name}.toml"
    config_path.write_text(config)
    started = time.monotonic()
    print(f"== {name}: evo run {config_path} --out {folder}", flush=True)
    done = subprocess.run([sys.executable, "-m", "evo", "run", str(config_path), "--out", str(folder)], cwd=ROOT)
    print(f"== {name}: exit {done.returncode} after {time.monotonic() - started:.0f} s", flush=True)
    return folder


def covered(generations: str, path: str, names: list[str]) -> list[str]:
    """Returns the tasks of `names` that the generations file has a reply for (its rows
    matched as the campaign will match them), printing how its rows matched."""
    suite = registry.load("tritonbench-revised", path).tasks()
    samples, report = recorded_generations.matched(generations, suite, names)
    print(report, flush=True)
    return [name for name in names if name in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", required=True, help="the GEAK-eval checkout")
    parser.add_argument("--generations", nargs="*", default=[],
                        help="recorded-generations JSONL files, one model each (Table 2)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated")
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--minutes", type=float, default=20.0, help="wall time of all the campaigns")
    parser.add_argument("--tasks-per-level", type=int, default=None)
    parser.add_argument("--search-generations", type=int, default=4)
    parser.add_argument("--islands", type=int, default=4)
    parser.add_argument("--offspring", type=int, default=2)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = runnable_tasks(args.path, args.suites.split(","), args.device, args.tasks_per_level)
    print("tasks: " + ", ".join(f"{suite} {len(names)}" for suite, names in tasks.items()), flush=True)
    budget_s = args.minutes * 60
    direct = {}
    for generations in args.generations:
        model = recorded_generations.default_model(generations)
        config = campaign_config(
            f"direct-{model}", "tritonbench-revised", args.path,
            covered(generations, args.path, tasks["tritonbench-revised"]),
            {"generations": 0, "islands": 1, "offspring": 1},
            {"generations_from": str(pathlib.Path(generations).resolve())}, args,
            budget_s * DIRECT_SHARE / len(args.generations), seed_with_baseline=False)
        direct[model] = run_campaign(out, f"direct-{model}", config)
    search = {}
    search_s = budget_s * (1 - DIRECT_SHARE if args.generations else 1.0)
    weights = {suite: len(names) for suite, names in tasks.items() if names}
    for suite, count in weights.items():
        config = campaign_config(
            f"search-{suite}", suite, args.path, tasks[suite],
            {"generations": args.search_generations, "islands": args.islands, "offspring": args.offspring},
            {}, args, search_s * count / sum(weights.values()), seed_with_baseline=True)
        search[suite] = run_campaign(out, f"search-{suite}", config)
    command = [sys.executable, "-m", "evo.analysis.geak_tables", "--out", str(out / "tables")]
    for model, folder in direct.items():
        command += ["--direct", f"{model}={folder}"]
    for folder in search.values():
        command += ["--search", str(folder)]
    subprocess.run(command, cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
