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
3. the tables and figures (`evo.analysis.geak_tables`) in OUT/tables, by difficulty too; with
   `--geak-verdicts` (`experiments/perf/llm_corpus.py` JSONs: GEAK-eval's harness run on the
   same replies), Table 2 beside those verdicts, by level (OUT/tables/table2_beside_geak_eval.md).
`--minutes` is split between the steps as each campaign's `max_wall_seconds` (direct
prompting a fifth, the search the rest; with `--no-search`, direct prompting alone, all of it); a campaign cut short by it is reported as far as it
went. It bounds the generations, not the seeds: every task's seeds are scored whatever the
budget (a resume starts there), so a run over many tasks takes at least their seeding (on
the H200, 13 TritonBench-revised tasks seeded in about 340 s with 14 workers: RESULTS.md §19). `--tasks-per-level N` keeps the first N tasks of
each difficulty level of each suite (by name), for a run smaller than the whole benchmark.

Several device calls add up: `--call-minutes M` bounds this call (the campaign running then
gets SIGTERM and stops at its last checkpoint; none starts after; the tables are built from
what there is), and `--resume` continues the campaigns OUT already holds (`evo run --resume`;
one that ended on its own, every generation or a budget cap, is left as it is). A call's
OUT is the union: copy the earlier call's OUT there first. The suite path is written
relative to the repository when it lies inside it, so a campaign resumes on another machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import signal
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
STOP_GRACE_S = 60.0
"""How long a campaign sent SIGTERM at the call's end has to stop at its checkpoint."""
TABLES_S = 45.0
"""Of `--call-minutes`, what is kept for the stop and the tables."""


def runnable_tasks(path: str, suites: list[str], device: str, per_level: int | None,
                   only: list[str] = ()) -> dict[str, list[str]]:
    """Returns {suite: task names} that run on `device`, the first `per_level` of each
    difficulty level (by name) when given, of `only` when given (a name no suite has
    raises SystemExit naming it)."""
    loaded = {suite: registry.load(suite, path).tasks() for suite in suites}
    unknown = sorted(set(only) - {task.name for tasks in loaded.values() for task in tasks})
    if unknown:
        raise SystemExit(f"--tasks: no task {', '.join(unknown)} in {', '.join(suites)}")
    chosen = {}
    for suite in suites:
        tasks = sorted((task for task in loaded[suite] if device in task.runnable_on
                        and (not only or task.name in only)),
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
                    seed_with_baseline: bool, time_every_case: bool = False) -> str:
    """Returns a campaign's TOML (`time_every_case`: direct prompting's, whose speedup
    averages every correct reply, the slow ones too)."""
    sections = {
        "campaign": {"name": name, "suite": suite, "path": portable(path),
                     "tasks": tasks, "seed": 0, "seed_with_baseline": seed_with_baseline},
        "search": {"population": 2, "migration_interval": 0, **search},
        "operators": {"mode": "offline", **operators},
        "fitness": {"device": args.device, "workers": args.workers,
                    **({"spares": args.spares} if args.spares is not None else {}),
                    "time_every_case": time_every_case},
        "budget": {"max_wall_seconds": round(wall_s)},
    }
    return "".join(f"[{section}]\n" + "".join(f"{key} = {_toml(value)}\n" for key, value in keys.items()) + "\n"
                   for section, keys in sections.items())


def portable(path: str) -> str:
    """Returns `path` relative to the repository when it lies inside it (the campaign's
    `evo run` runs there), else absolute: the same config on every machine of a resume."""
    resolved = pathlib.Path(path).resolve()
    return os.path.relpath(resolved, ROOT) if resolved.is_relative_to(ROOT) else str(resolved)


def finished(folder: pathlib.Path) -> bool:
    """Whether the campaign in `folder` ended on its own (every generation, a budget cap, its
    LLM calls): a resume has nothing to add. One stopped by a signal, a fatal cause or a
    kill (no "stop" recorded) has."""
    try:
        stop = json.loads((folder / "campaign.json").read_text()).get("stop")
    except FileNotFoundError:
        return False
    return bool(stop) and not str(stop.get("stopped_by")).startswith("SIG") and stop.get("stopped_by") != "fatal"


def rows(folder: pathlib.Path) -> int:
    """Returns how many evaluations the campaign in `folder` has written (0 for none yet)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(part).metadata.num_rows for part in (folder / "evaluations").rglob("*.parquet"))


def stages(folder: pathlib.Path, since: float, wall_s: float) -> str:
    """Returns where the evaluations written since `since` (a file time) spent their time: the
    median and sum of each stage's seconds (compile_s: the timing pass's preparation on an
    external suite; bench_s: the timing pass, the device held alone) against the wall."""
    import pandas

    parts = [part for part in (folder / "evaluations").rglob("*.parquet") if part.stat().st_mtime >= since]
    if not parts:
        return "no evaluation written"
    frame = pandas.concat([pandas.read_parquet(part, columns=["compile_s", "check_s", "bench_s"]) for part in parts])
    return ", ".join(f"{stage} median {frame[stage].median():.2f} sum {frame[stage].sum():.0f}"
                     for stage in frame.columns) + f" (s, {len(frame)} evaluations, wall {wall_s:.0f} s)"


def run_campaign(out: pathlib.Path, name: str, config: str, resume: bool = False,
                 deadline: float | None = None) -> pathlib.Path:
    """Writes the config beside the results and runs `evo run` on it (`--resume` when
    `resume` and the folder holds the campaign); at `deadline` (monotonic) sends it SIGTERM;
    returns its folder."""
    folder = out / name
    config_path = out / f"{name}.toml"
    config_path.write_text(config)
    if resume and finished(folder):
        print(f"== {name}: ended in an earlier call, left as it is", flush=True)
        return folder
    if deadline is not None and time.monotonic() >= deadline:
        print(f"== {name}: not started, this call's time is up (--resume continues)", flush=True)
        return folder
    command = [sys.executable, "-m", "evo", "run", str(config_path), "--out", str(folder)]
    command += ["--resume"] if resume and (folder / "campaign.json").exists() else []
    started, since, rows_before = time.monotonic(), time.time(), rows(folder)
    print(f"== {name}: {' '.join(command[1:])}", flush=True)
    process = subprocess.Popen(command, cwd=ROOT)
    try:
        code = process.wait(timeout=None if deadline is None else max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        print(f"== {name}: this call's time is up: SIGTERM (it stops at its last checkpoint)", flush=True)
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
    wall_s, scored = time.monotonic() - started, rows(folder) - rows_before
    print(f"== {name}: exit {code} after {wall_s:.0f} s: {scored} evaluations in this call, "
          f"{scored / wall_s * 60:.1f}/min; {stages(folder, since, wall_s)}", flush=True)
    print(f"== {name}: {metered(folder)}", flush=True)
    return folder


def metered(folder: pathlib.Path, most: int = 8) -> str:
    """Returns where this run's fitness time went (its last fitness_meter.jsonl line): the
    `most` request kinds by seconds over its actors, and its waits for the device."""
    from evo import fitness_meter

    runs = fitness_meter.read(folder)
    actors = [actor for actor in (runs[-1]["actors"] if runs else []) if actor]
    if not actors:
        return "no fitness meter recorded"
    seconds: dict[str, float] = {}
    for actor in actors:
        for kind, spent in actor.get("request_s", {}).items():
            if kind.count(".") == 1:  # a request, not one of its parts
                seconds[kind] = seconds.get(kind, 0.0) + spent
    top = sorted(seconds.items(), key=lambda item: -item[1])[:most]
    waits = {key: sum(actor.get(key, 0.0) for actor in actors)
             for key in ("walk_wait_s", "ready_wait_s", "busy_s")}
    return ("fitness seconds by request: " + ", ".join(f"{kind} {spent:.0f}" for kind, spent in top)
            + "; " + ", ".join(f"{key} {value:.0f}" for key, value in waits.items()))


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
    parser.add_argument("--spares", type=int, default=None,
                        help="the campaigns' spare workers (`[fitness] spares`; default: half of --workers)")
    parser.add_argument("--minutes", type=float, default=20.0, help="wall time of all the campaigns")
    parser.add_argument("--tasks-per-level", type=int, default=None)
    parser.add_argument("--tasks", default="", help="only these tasks (comma-separated)")
    parser.add_argument("--search-generations", type=int, default=4)
    parser.add_argument("--islands", type=int, default=4)
    parser.add_argument("--offspring", type=int, default=2)
    parser.add_argument("--call-minutes", type=float, default=None,
                        help="this call's wall time: then SIGTERM, no new campaign, the tables")
    parser.add_argument("--resume", action="store_true", help="continue the campaigns OUT holds")
    parser.add_argument("--no-search", action="store_true",
                        help="direct prompting only (Table 2): no offline arm")
    parser.add_argument("--tables-only", action="store_true",
                        help="run no campaign: the tables from those OUT holds (a cut call's)")
    parser.add_argument("--geak-verdicts", nargs="*", default=[], metavar="JSON",
                        help="GEAK-eval's harness verdicts on the same replies (llm_corpus.py "
                             "JSONs): Table 2 beside them, by level, in OUT/tables")
    args = parser.parse_args()
    deadline = (None if args.call_minutes is None
                else time.monotonic() + args.call_minutes * 60 - TABLES_S)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = runnable_tasks(args.path, args.suites.split(","), args.device, args.tasks_per_level,
                           [name for name in args.tasks.split(",") if name])
    print("tasks: " + ", ".join(f"{suite} {len(names)}" for suite, names in tasks.items()), flush=True)
    budget_s = args.minutes * 60
    direct = {}
    for generations in args.generations:
        model = recorded_generations.default_model(generations)
        if args.tables_only:
            direct[model] = out / f"direct-{model}"
            continue
        replied = covered(generations, args.path, tasks["tritonbench-revised"])
        if not replied:  # an empty task list would mean every task of the suite
            print(f"== direct-{model}: no task here that its replies serve, none scored", flush=True)
            continue
        config = campaign_config(
            f"direct-{model}", "tritonbench-revised", args.path, replied,
            {"generations": 0, "islands": 1, "offspring": 1},
            {"generations_from": portable(generations)}, args,
            budget_s * (1.0 if args.no_search else DIRECT_SHARE) / len(args.generations),
            seed_with_baseline=False, time_every_case=True)
        direct[model] = run_campaign(out, f"direct-{model}", config, args.resume, deadline)
    search = {}
    search_s = budget_s * (1 - DIRECT_SHARE if args.generations else 1.0)
    weights = {suite: len(names) for suite, names in tasks.items() if names and not args.no_search}
    for suite, count in weights.items():
        if args.tables_only:
            search[suite] = out / f"search-{suite}"
            continue
        config = campaign_config(
            f"search-{suite}", suite, args.path, tasks[suite],
            {"generations": args.search_generations, "islands": args.islands, "offspring": args.offspring},
            {}, args, search_s * count / sum(weights.values()), seed_with_baseline=True)
        search[suite] = run_campaign(out, f"search-{suite}", config, args.resume, deadline)
    arguments = [*(part for model, folder in direct.items() if rows(folder)
                   for part in ("--direct", f"{model}={folder}")),
                 *(part for folder in search.values() if rows(folder) for part in ("--search", str(folder)))]
    if not arguments:
        print("== tables: no campaign has rows yet", flush=True)
        return
    subprocess.run([sys.executable, "-m", "evo.analysis.geak_tables", "--out", str(out / "tables"), *arguments],
                   cwd=ROOT, check=True)
    if args.geak_verdicts and direct:
        text = beside_geak_eval(direct, args.geak_verdicts, args.path)
        (out / "tables" / "table2_beside_geak_eval.md").write_text(text)
        print(text, flush=True)


def beside_geak_eval(direct: dict[str, pathlib.Path], verdicts: list[str], path: str) -> str:
    """Returns Table 2 (each model's campaign that has rows) beside GEAK-eval's harness on the
    same replies (`llm_corpus.py` JSONs, read as `corpus_levels.py` reads them), by level:
    exec and call accuracy, ours then GEAK-eval's, and our speedups (where timed meaningfully).
    Both sides count only the tasks our campaign scored a reply for (`_scored`): a call cut
    short leaves the rest unscored, and GEAK-eval's verdicts on all 184 replies beside ours on
    the 27 scored read as disagreements that were not there (RESULTS.md §32).
    A model the verdicts lack reads "-" there."""
    from evo.analysis import geak_tables

    sys.path.insert(0, str(ROOT / "experiments" / "perf"))
    import corpus_levels

    levels = {task.name: task.difficulty for task in registry.load("tritonbench-revised", path).tasks()}
    scored = {model: _scored(folder, levels) for model, folder in direct.items() if rows(folder)}
    replies = {key: reply for key, reply in corpus_levels.replies(verdicts).items()
               if key[0] in scored and key[1] in scored[key[0]].task_names}
    theirs = {(line["model"], line["level"].removeprefix("L")): line
              for line in corpus_levels.by_level(replies, levels)}
    ours = geak_tables.direct_prompting(scored)
    lines = ["| model | level | tasks | exec acc % | GEAK-eval exec acc % | call acc % | "
             "GEAK-eval call acc % | speedup (GEAK mean) | speedup geomean | timed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in ours.itertuples():
        geak = theirs.get((row.model, row.level))
        lines.append(f"| {row.model} | {row.level} | {row.tasks} | {100 * row.exec_accuracy:.1f} | "
                     f"{_share(geak, 'geak_exec')} | {100 * row.call_accuracy:.1f} | "
                     f"{_share(geak, 'geak_call')} | "
                     f"{_speedup(row.speedup_mean, row.timing_meaningful)} | "
                     f"{_speedup(row.speedup_geomean, row.timing_meaningful)} | {row.timed} |")
    return "\n".join(lines) + "\n"


def _scored(folder: pathlib.Path, levels: dict[str, int]):
    """Returns the campaign in `folder` as if it named only the tasks it drew a reply for (a
    generator row, or an LLM-call row: a reply with no usable code), so that the tasks it
    never reached count on neither side; a campaign.json from before each task's difficulty
    was recorded takes `levels` (the suite's), so that a reply with no row still counts at
    its level."""
    from evo.analysis import geak_tables, metrics

    results = metrics.load(folder)
    found = results.evaluations
    tasks = sorted(set(found.loc[found["operator"] == geak_tables.GENERATOR_OPERATOR, "task"]))
    config = results.meta.get("config", {})
    campaign = {**config.get("campaign", {}), "tasks": tasks}
    meta = {**results.meta, "difficulty": results.meta.get("difficulty") or levels,
            "config": {**config, "campaign": campaign}}
    return dataclasses.replace(results, meta=meta,
                               evaluations=found[found["task"].isin(tasks)])


def _share(line: dict | None, field: str) -> str:
    return "-" if line is None else f"{line[field]:.1f}"


def _speedup(value, meaningful: bool) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.3f}" if meaningful else "n/a (interpreter)"


if __name__ == "__main__":
    main()
