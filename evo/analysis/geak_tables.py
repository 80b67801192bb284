"""GEAK's tables from KernelEvo campaigns: direct prompting per model (the GEAK paper's Table 2),
sequential scaling by generation (Table 5) and parallel scaling by independent runs (Table 6),
each by difficulty level too.

Every row reduces its campaign to one outcome per task (called, solved, best correct timed
speedup) and reads it with `metrics.suite_metrics`, so the numbers mean what docs/metrics.md
says: call / exec acc are shares of all the campaign's tasks (a task without a row counts as
failed); speedup is GEAK's mean (and the geomean) over the tasks solved and timed; "> ref" is
fast_1, the share of all tasks faster than the reference. What each table reads: direct
prompting the first generator candidate of island 0 (the recorded reply; seeds left out);
sequential island 0 up to generation g, seeds included; parallel islands 0..k-1, all
generations. Speedups read "n/a (interpreter)" where no row was timed meaningfully, as in
every table (evo.analysis.speedup_cells).

  python -m evo.analysis.geak_tables --direct MODEL=DIR [...] [--search DIR ...] --out OUTDIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import geak_figures, metrics, noise, speedup_cells

GENERATOR_OPERATOR = "generator"
"""The operator of a recorded reply's candidate (`operators.generations_from`)."""
ALL_LEVELS = "all"
COLUMNS = ("level", "tasks", "call_accuracy", "exec_accuracy", "speedup_mean", "speedup_geomean",
           "timed", "faster_than_reference", "timing_meaningful")
"""The columns every table shares, after its own key (model, generation or k)."""
HEADERS = {"model": "model", "generation": "generation", "k": "k", "level": "level",
           "tasks": "tasks", "call_accuracy": "call acc", "exec_accuracy": "exec acc",
           "speedup_mean": "speedup (GEAK mean)", "speedup_geomean": "speedup geomean",
           "timed": "timed", "faster_than_reference": "> ref"}
SHARES = ("call_accuracy", "exec_accuracy", "faster_than_reference")
TIMED = ("speedup_mean", "speedup_geomean", "faster_than_reference")
"""The columns read from speedups: left out when the timing is not meaningful."""
NAME = "geak_tables"


def outcomes(results: metrics.Results, rows: pd.DataFrame) -> pd.DataFrame:
    """Returns one row per campaign task from `rows` (some of its evaluations), as the task
    table `metrics.suite_metrics` reads: one run, called / solved when a row did, the best
    correct timed speedup (NaN when none) and its timing_meaningful; the difficulty from any
    row of the task, else from campaign.json (`metrics.Results.difficulty`)."""
    grouped, best = rows.groupby("task"), metrics.best_rows(rows)
    table = pd.DataFrame({"runs_called": grouped["call_ok"].any(),
                          "runs_solved": grouped["correct"].any(),
                          "best_speedup": best["speedup"],
                          "timing_meaningful": best["timing_meaningful"]})
    table = table.reindex(results.task_names)
    table[["runs_called", "runs_solved"]] = table[["runs_called", "runs_solved"]].fillna(False)
    table = table.astype({"runs_called": int, "runs_solved": int, "best_speedup": float})
    table["runs"] = 1
    table["difficulty"] = results.difficulty
    return table


def levels(table: pd.DataFrame, meaningful: bool) -> list[dict[str, Any]]:
    """Returns the shared columns of a task table: one dict per difficulty level, then all."""
    groups = [(f"{difficulty:g}", group) for difficulty, group in table.groupby("difficulty")]
    found = []
    for level, group in groups + [(ALL_LEVELS, table)]:
        suite = metrics.suite_metrics(group)
        found.append({"level": level, **{c: suite[c] for c in COLUMNS[1:6]},
                      "timed": int(group["best_speedup"].notna().sum()),
                      "faster_than_reference": suite["fast_p"]["1"],
                      "timing_meaningful": meaningful})
    return found


def _load(folder: Path | str | metrics.Results) -> metrics.Results:
    return folder if isinstance(folder, metrics.Results) else metrics.load(folder)


def _meaningful(results: metrics.Results) -> bool:
    return not noise.meaningless(results.evaluations)


def direct_prompting(folders: dict[str, Path | str | metrics.Results]) -> pd.DataFrame:
    """Returns Table 2: per model (label) and level, the outcome of each task's first
    generator candidate on island 0 (the model's one reply; later samples left out)."""
    found = []
    for label, folder in folders.items():
        results = _load(folder)
        rows = results.evaluations
        replies = rows[(rows["operator"] == GENERATOR_OPERATOR) & (rows["island"] == 0)]
        first = replies.sort_values("generation", kind="stable").groupby("task").head(1)
        found += [{"model": label, **row}
                  for row in levels(outcomes(results, first), _meaningful(results))]
    return pd.DataFrame(found, columns=("model",) + COLUMNS)


def _by_level(found: list[dict[str, Any]], key: str) -> pd.DataFrame:
    """Returns rows made key-major as a frame ordered by level (as first seen), then key."""
    frame = pd.DataFrame(found, columns=(key,) + COLUMNS)
    order = {level: rank for rank, level in enumerate(dict.fromkeys(frame["level"]))}
    frame = frame.sort_values("level", key=lambda levels: levels.map(order), kind="stable")
    return frame.reset_index(drop=True)


def sequential(folder: Path | str | metrics.Results) -> pd.DataFrame:
    """Returns Table 5: per level and generation g, island 0's rows of generations 0..g."""
    results = _load(folder)
    island = results.evaluations[results.evaluations["island"] == 0]
    meaningful = _meaningful(results)
    return _by_level([{"generation": g, **row} for g in metrics.generations(results)
                      for row in levels(outcomes(results, island[island["generation"] <= g]),
                                        meaningful)], "generation")


def parallel(folder: Path | str | metrics.Results) -> pd.DataFrame:
    """Returns Table 6: per level and k, the rows of islands 0..k-1, every generation (a
    task's best over its first k runs), for k = 1 up to the most islands a task has."""
    results = _load(folder)
    rows, meaningful = results.evaluations, _meaningful(results)
    runs = max(len(results.islands_of(task)) for task in results.task_names)
    return _by_level([{"k": k, **row} for k in range(1, runs + 1)
                      for row in levels(outcomes(results, rows[rows["island"] < k]), meaningful)],
                     "k")


def notes(results: metrics.Results) -> list[str]:
    """Returns what a reader needs beside a campaign's speedups: the seeds' noise bands, and
    whether its islands are independent runs (the interpreter caveat is the tables' star)."""
    found = [line for line in noise.notes(results.evaluations)
             if not line.startswith(noise.INTERPRETER_CAVEAT)]
    if results.independent_runs is False:
        found.append(f"{results.name}: islands exchange migrants (migration_interval > 0), "
                     "so k islands are not k independent runs")
    return found


def tables(direct: dict[str, Path | str], search: list[Path | str]) -> dict[str, Any]:
    """Returns every table: "direct" (Table 2, None without folders), "direct_notes", and
    "search": {campaign name: {"path", "sequential", "parallel", "notes"}}."""
    direct_results = {label: metrics.load(folder) for label, folder in direct.items()}
    report: dict[str, Any] = {
        "direct": direct_prompting(direct_results) if direct_results else None,
        "direct_notes": [f"{label}: {line}" for label, results in direct_results.items()
                         for line in notes(results)],
        "search": {}}
    for folder in search:
        results = metrics.load(folder)
        if results.name in report["search"]:
            raise ValueError(f"two search campaigns are named {results.name!r} ("
                             f"{report['search'][results.name]['path']}, {folder}): tables are "
                             "titled by campaign name")
        report["search"][results.name] = {"path": str(folder), "sequential": sequential(results),
                                          "parallel": parallel(results), "notes": notes(results)}
    return report


def _cell(column: str, value: Any, meaningful: bool) -> str:
    if value is None or pd.isna(value):
        return "-"
    if column in TIMED:  # left out on the interpreter, as in every table
        return speedup_cells.cell(value, "%" if column in SHARES else "x", meaningful)
    if column in SHARES:
        return f"{100 * value:.1f}%"
    return str(value)


def table_text(frame: pd.DataFrame, key: str) -> list[str]:
    """Returns a table's markdown lines (level first where rows are grouped by it, model
    first in Table 2), with the interpreter caveat under speedups left out."""
    shown = [key, *COLUMNS[:-1]] if key == "model" else ["level", key, *COLUMNS[1:-1]]
    lines = ["| " + " | ".join(HEADERS[c] for c in shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(_cell(c, row[c], row["timing_meaningful"]) for c in shown) + " |"
              for row in frame.to_dict("records")]
    if not frame["timing_meaningful"].all():
        lines += ["", f"{speedup_cells.NOT_MEANINGFUL}: {noise.INTERPRETER_CAVEAT}"]
    return lines


def markdown(report: dict[str, Any]) -> str:
    """Returns the tables as markdown, each with what it reads and its notes."""
    lines = ["# GEAK tables", "",
             "call acc / exec acc: share of all tasks whose candidate ran / was correct; speedup: "
             "over the reference, GEAK's mean (and the geomean) over the tasks solved and timed "
             "(their count: timed); > ref: share of all tasks faster than the reference "
             "(docs/metrics.md)."]
    if report["direct"] is not None:
        lines += ["", "## Table 2: direct prompting", "",
                  "Each model's first recorded reply per task (island 0's first generator "
                  "candidate).", "", *table_text(report["direct"], "model")]
        lines += [f"- {line}" for line in report["direct_notes"]]
    for name, search in report["search"].items():
        lines += ["", f"## Table 5: sequential scaling, {name}", "",
                  "Island 0, everything up to generation g (the seeds are generation 0).", "",
                  *table_text(search["sequential"], "generation"),
                  "", f"## Table 6: parallel scaling, {name}", "",
                  "The best of islands 0..k-1 (independent runs), every generation.", "",
                  *table_text(search["parallel"], "k")]
        lines += [""] + [f"- {line}" for line in search["notes"]] if search["notes"] else []
    return "\n".join(lines) + "\n"


def to_json(report: dict[str, Any]) -> dict[str, Any]:
    """Returns the tables as plain JSON values (rows as records, NaN as null)."""
    def records(frame: pd.DataFrame | None) -> list | None:
        return None if frame is None else metrics.to_json_value(frame.to_dict("records"))
    return {"direct": records(report["direct"]), "direct_notes": report["direct_notes"],
            "search": {name: {"path": s["path"], "sequential": records(s["sequential"]),
                              "parallel": records(s["parallel"]), "notes": s["notes"]}
                       for name, s in report["search"].items()}}


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """Writes geak_tables.md, geak_tables.json and the figures to `out`; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{NAME}.md", out / f"{NAME}.json"]
    written[0].write_text(markdown(report))
    written[1].write_text(json.dumps(to_json(report), indent=2))
    return written + geak_figures.write(report, out, ALL_LEVELS)


def _labelled(value: str) -> tuple[str, str]:
    label, sep, folder = value.partition("=")
    if not sep or not label or not folder:
        raise argparse.ArgumentTypeError(f"--direct takes LABEL=DIR (a model and its campaign "
                                         f"folder), got {value!r}")
    return label, folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evo.analysis.geak_tables",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--direct", type=_labelled, action="append", default=[],
                        metavar="LABEL=DIR", help="a direct-prompting campaign and its model")
    parser.add_argument("--search", action="append", default=[], metavar="DIR",
                        help="a search campaign (independent islands)")
    parser.add_argument("--out", required=True, type=Path, help="where the tables and PNGs go")
    args = parser.parse_args(argv)
    if not args.direct and not args.search:
        parser.error("give at least one --direct LABEL=DIR or --search DIR")
    try:
        report = tables(dict(args.direct), args.search)
    except (FileNotFoundError, ValueError) as error:
        parser.exit(2, f"geak_tables: {error}\n")
    write(report, args.out)
    print(markdown(report), end="")


if __name__ == "__main__":
    main()
