"""`evo report DIR [--json]`: the numbers and figures of a campaign or a sweep folder.

The JSON and the printed tables come from one dict, so what a script reads is what a person
sees. Figures land in DIR/figures either way. A campaign timed on a GPU is also read against
torch's own timings of the same cases when they exist (evo.analysis.torch_comparison). Every
campaign report says how its last run ended and what its LLM calls failed with
(evo.analysis.outcome); for a campaign without evaluations that is the whole report.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evo.analysis import (best, compare, llm_cost, noise, outcome, plots, speedup_cells,
                          torch_comparison)
from evo.analysis import metrics as analysis
from evo.analysis.html_page import number


@dataclasses.dataclass(frozen=True)
class Tables:
    """The metrics tables of one campaign that its report prints and its figures draw."""

    tasks: pd.DataFrame
    generations: pd.DataFrame
    runs: pd.DataFrame
    best: pd.DataFrame
    solved_curves: dict[str, dict[int, float]]
    called_curves: dict[str, dict[int, float]]
    meaningful: bool | None  # None: nothing timed yet


def tables_of(results: analysis.Results) -> Tables:
    """Returns the metrics tables of `results`."""
    tasks = analysis.task_table(results)
    return Tables(tasks=tasks, generations=analysis.by_generation(results),
                  runs=analysis.by_runs(results, tasks),
                  best=analysis.best_speedup_by_generation(results),
                  solved_curves=analysis.pass_curves(tasks, "runs_solved"),
                  called_curves=analysis.pass_curves(tasks, "runs_called"),
                  meaningful=analysis.timing_meaningful(results.evaluations))


def campaign_figures(results: analysis.Results, tables: Tables) -> dict[str, Figure]:
    """Returns the campaign's figures by file name (without .png), drawn, not saved."""
    rows = results.evaluations
    meaningful = tables.meaningful is not False
    band = noise.suite_band(noise.seed_bands(rows))
    return {
        "accuracy_vs_generation": plots.accuracy_vs_generation(tables.generations),
        "pass_at_k": plots.pass_at_k(tables.runs, tables.solved_curves, results.independent_runs),
        "best_speedup_by_generation": plots.best_speedup_by_generation(
            tables.best, meaningful, band and (band.low, band.high)),
        "speedup_distribution": plots.speedup_distribution(
            rows.loc[rows["correct"].astype(bool), "speedup"].dropna(), meaningful),
        "accuracy_vs_spend": plots.against_spend({results.name: tables.generations},
                                                 backends=results.backends),
    }


def campaign_report(results: analysis.Results,
                    torch_timings: Path | str | None = None) -> dict[str, Any]:
    """Returns every metric of one campaign, how its last run ended, and its comparison
    with torch, and writes its figures; `torch_timings` names the timings file (default:
    DIR/torch_timings.parquet)."""
    tables = tables_of(results)
    drawn = campaign_figures(results, tables)
    versus_torch = torch_comparison.comparison(results, torch_timings)
    if versus_torch["status"] == "joined":
        drawn["versus_torch"] = plots.versus_torch(versus_torch["cases"], torch_comparison.MODES)
    figures = [plots.save(figure, results.path / "figures" / f"{name}.png")
               for name, figure in drawn.items()]
    ended = outcome.outcome(results.path, results.meta, results.llm_calls)
    suite = analysis.suite_metrics(tables.tasks)
    suite["spend"] = {m: float(tables.generations[m].iloc[-1]) for m in analysis.SPEND_MEASURES}
    return {
        "campaign": results.name,
        "path": str(results.path),
        "backends": results.backends,
        "suite": suite,
        "tasks": {name: {**row.to_dict(),
                         "pass_at_k": tables.solved_curves[name],
                         "call_pass_at_k": tables.called_curves[name]}
                  for name, row in tables.tasks.iterrows()},
        "best_candidates": best.of_results(results),
        "by_generation": tables.generations.reset_index().to_dict("records"),
        "by_runs": tables.runs.reset_index().to_dict("records"),
        "best_speedup_by_generation": {task: tables.best[task].tolist()
                                       for task in tables.best.columns},
        "by_difficulty": analysis.by_difficulty(tables.tasks),
        "torch": versus_torch,
        "stop": ended["stop"],
        "llm": ended["llm"],
        "llm_cost": llm_cost.of(results),
        "notes": analysis.timing_notes(results) + ended["notes"],
        "figures": [str(p) for p in figures],
    }


LEFT_COLUMNS = ("task", "spent on", "cell", "failure kind", "latest error", "candidate", "operator",
                "ranked")


def _table(title: str, columns: list[str], rows: list[list[str]], caption: str = "") -> Table:
    table = Table(title=title, title_justify="left", caption=caption or None,
                  caption_justify="left")
    for column in columns:
        table.add_column(column, justify="left" if column in LEFT_COLUMNS else "right")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # names are data, not rich markup
    return table


def _suite_row(suite: dict[str, Any]) -> list[str]:
    def speed(value, kind: str) -> str:
        return speedup_cells.cell(value, kind, suite["timing_meaningful"])

    return [number(suite["call_accuracy"], "%"), number(suite["exec_accuracy"], "%"),
            number(suite["pass_at_k"].get("1"), "%"), speed(suite["speedup_mean"], "x"),
            speed(suite["speedup_geomean"], "x")] + [speed(v, "%")
                                                     for v in suite["fast_p"].values()]


SUITE_COLUMNS = ["call acc", "exec acc", "pass@1", "speedup mean", "speedup geomean",
                 "fast_0", "fast_1", "fast_1.5", "fast_2"]


def print_campaign(report: dict[str, Any], console: Console) -> None:
    """Prints a campaign report as tables."""
    tasks = [[name, number(t["difficulty"]), number(t["candidates"]),
              number(t["call_rate"], "%"), number(t["correct_rate"], "%"),
              f"{t['runs_solved']}/{t['runs']}", number(t["pass_at_k"].get("1"), "%"),
              number(t["pass_at_k"].get(str(t["runs"])), "%"),
              speedup_cells.cell(t["best_speedup"], "x", t["timing_meaningful"]),
              number(t["roofline_fraction"], "%")]
             for name, t in report["tasks"].items()]
    console.print(_table(f"Campaign {report['campaign']}: tasks",
                         ["task", "difficulty", "candidates", "call rate", "correct rate",
                          "runs solved", "pass@1", "pass@n", "best speedup", "roofline"], tasks))
    _print_best(report, console)
    meaningful = report["suite"]["timing_meaningful"]  # by generation and by runs: the campaign's
    console.print(_table("Suite", SUITE_COLUMNS, [_suite_row(report["suite"])]))
    console.print(_table("By generation (cumulative)",
                         ["gen", "call acc", "exec acc", "pass@1", "speedup geomean", "fast_1",
                          "evals", "tokens", "USD", plots.seconds_name(report["backends"]) + "-s"],
                         [[str(g["generation"]), number(g["call_accuracy"], "%"),
                           number(g["exec_accuracy"], "%"), number(g["pass_at_1"], "%"),
                           speedup_cells.cell(g["speedup_geomean"], "x", meaningful),
                           speedup_cells.cell(g["fast_1"], "%", meaningful),
                           number(g["evaluations"]), number(g["tokens"]), f"{g['usd']:.4f}",
                           number(g["gpu_s"])] for g in report["by_generation"]]))
    console.print(_table("By runs k (parallel scaling)",
                         ["k", "pass@k", "call pass@k", "expected best speedup"],
                         [[str(r["k"]), number(r["pass_at_k"], "%"),
                           number(r["call_pass_at_k"], "%"),
                           speedup_cells.cell(r["expected_best_speedup"], "x",
                                              meaningful)]
                          for r in report["by_runs"]]))
    console.print(_table("By difficulty", ["difficulty", "tasks"] + SUITE_COLUMNS,
                         [[d, str(s["tasks"])] + _suite_row(s)
                          for d, s in report["by_difficulty"].items()]))
    _print_torch(report["torch"], console)
    _print_llm_cost(report["llm_cost"], console)
    _print_outcome(report, console)
    _print_footer(report, console)


def _print_llm_cost(cost: dict[str, Any] | None, console: Console) -> None:
    """Prints the LLM's tokens and dollars in all, per candidate and per correct candidate
    (evo.analysis.llm_cost); nothing when no LLM was called."""
    if cost is None:
        return
    rows = [["all LLM calls", number(cost["calls"]), number(cost["tokens"]),
             number(cost["usd"], "$")]]
    for name, count, per in (("per candidate", cost["candidates"], cost["per_candidate"]),
                             ("per correct candidate", cost["correct"], cost["per_correct"])):
        rows.append([name, number(count)] + ([number(per["tokens"]), number(per["usd"], "$")]
                                             if per else ["-", "-"]))
    console.print(_table("LLM cost", ["spent on", "count", "tokens", "USD"], rows,
                         caption="every call counts, divided among the candidates LLM answers "
                                 "became (docs/metrics.md, \"LLM cost\")"))


def _print_best(report: dict[str, Any], console: Console) -> None:
    """Prints each task's best candidate and how it was ranked (evo.analysis.best)."""
    chosen = report["best_candidates"]
    in_cells = any(c and "cell" in c for c in chosen.values())
    rows = [[task] + ([c.get("cell", "-")] if in_cells else [])
            + [c["candidate_id"][:ID_SHOWN], str(c["generation"]), str(c["island"]),
               c["operator"], best.speedup_text(c), c["ranking"]] if c else
            [task] + ["-"] * (5 + in_cells) + ["no correct candidate"]
            for task, c in chosen.items()]
    folder = report.get("path") or report["sweep"]  # a sweep's: the best over every cell
    console.print(_table("Best candidate per task" + (" (over every cell)" if in_cells else ""),
                         ["task"] + ["cell"] * in_cells + ["candidate", "generation", "island",
                                                            "operator", "speedup", "ranked"],
                         rows, caption=f"write one to a file: evo export {folder} --task TASK "
                                       "(or --candidate ID)"))


ID_SHOWN = 12
"""Characters of a candidate id shown (`evo export --candidate` takes any unique prefix)."""


def print_without_evaluations(report: dict[str, Any], console: Console) -> None:
    """Prints the report of a campaign that holds no evaluation: what ended it and why."""
    console.print(f"Campaign {escape(report['campaign'])} ({escape(report['path'])}) has no "
                  "evaluations: no candidate was scored.")
    _print_outcome(report, console)
    _print_footer(report, console)


def _print_outcome(report: dict[str, Any], console: Console) -> None:
    """Prints how the last run ended and the failed LLM calls by kind."""
    stop = report["stop"]
    if stop is not None:
        at = stop["at"][:19].replace("T", " ")
        console.print(f"last run: {escape(stop['reason'])} (at {at} UTC)")
        for line in stop["details"]:
            console.print(f"  {escape(line)}")
    llm = report["llm"]
    if llm["failed"]:
        rows = [[kind, str(failed["calls"]), failed["example"].strip().splitlines()[0][:200]]
                for kind, failed in llm["kinds"].items()]  # an example's first line
        console.print(_table(f"LLM calls: {llm['calls']}, {llm['failed']} failed",
                             ["failure kind", "calls", "latest error"], rows))
    elif llm["calls"]:
        console.print(f"LLM calls: {llm['calls']}, none failed")


TORCH_COLUMNS = {"eager": "eager", "default": "compile",
                 "max-autotune-no-cudagraphs": "max-autotune"}
"""Short table headings of torch_comparison.MODES."""


def _print_torch(versus: dict[str, Any], console: Console) -> None:
    """Prints the best kernels against torch per case and the summary lines, or the one
    line that says why there is no comparison."""
    if versus["status"] != "joined":
        console.print(f"[yellow]torch comparison: {escape(versus['message'])}[/yellow]")
        return
    modes = list(TORCH_COLUMNS)

    def latency(case: dict, mode: str) -> str:
        status = case["torch_status"][mode]
        return number(case["torch_us"][mode]) if status == "ok" else status.replace("_", " ")

    rows = [[c["task"], c["case"], number(c["best_us"]), number(c["baseline_us"])]
            + [latency(c, m) for m in modes]
            + [number(c["speedup"][k], "x") for k in ["baseline"] + modes]
            + [number(c["roofline"], "%"), number(c["copy_bandwidth"], "%")]
            for c in versus["cases"]]
    console.print(_table(
        f"Best kernel vs torch on {', '.join(versus['devices'])} (torch "
        f"{versus['torch_version']}; speedup = other latency / best latency)",
        ["task", "case", "best us", "baseline us"] + [f"{TORCH_COLUMNS[m]} us" for m in modes]
        + ["vs baseline"] + [f"vs {TORCH_COLUMNS[m]}" for m in modes]
        + ["roofline", "copy BW"], rows,
        caption=f"torch timings: {versus['source']}; copy BW: bytes moved at the measured copy "
                "bandwidth / best latency (memory-bound cases)"))
    summary = versus["summary"]
    for key, against in summary["versus"].items():
        name = {"baseline": "the baseline", "eager": "torch eager"}.get(key, f"torch.compile {key}")
        worst = against["worst"]
        console.print(f"best vs {name}: geomean {number(against['geomean'], 'x')} over "
                      f"{against['cases']} cases" + (
                          f", worst {number(worst['speedup'], 'x')} ({worst['task']} "
                          f"{worst['case']})" if worst else ""))
    for op, label in torch_comparison.LIBRARIES.items():
        against = summary["libraries"][op]
        if against["cases"]:
            console.print(f"{label} (torch eager): geomean {number(against['geomean'], 'x')} "
                          f"over {against['cases']} cases, worst "
                          f"{number(against['worst']['speedup'], 'x')}")
    memory = summary["memory_bound"]
    console.print(f"memory-bound cases at >= {number(memory['bar'], '%')} of the measured copy "
                  f"bandwidth ({number(versus['copy_gbs'])} GB/s): {memory['at_copy_bandwidth']} "
                  f"of {memory['cases']}")


def print_sweep(report: dict[str, Any], console: Console) -> None:
    """Prints a sweep report: one row per campaign, each task's best, the generations x
    islands grid, equal compute at several budgets, the noise and the notes."""
    keys = sorted({k for cell in report["cells"] for k in cell["overrides"]})
    backends = [backend for cell in report["cells"] for backend in cell["backends"]]
    meaningful = {c["cell"]: c["suite"]["timing_meaningful"] for c in report["cells"]}
    console.print(_table(
        f"Sweep {report['sweep']}", ["cell", *keys, "status", "exec acc", "found acc", "pass@1",
                                     "best speedup", "fast_1", "evals", "tokens", "USD",
                                     plots.seconds_name(backends) + "-s"],
        [[c["cell"], *[str(c["overrides"].get(k, "-")) for k in keys], c["status"],
          number(c["suite"]["exec_accuracy"], "%"), number(c["suite"]["found_accuracy"], "%"),
          number(c["suite"]["pass_at_k"].get("1"), "%"),
          speedup_cells.cell(c["suite"]["speedup_geomean"], "x", meaningful[c["cell"]]),
          speedup_cells.cell(c["suite"]["fast_p"]["1"], "%", meaningful[c["cell"]]),
          number(c["spend"]["evaluations"]),
          number(c["spend"]["tokens"]), f"{c['spend']['usd']:.4f}", number(c["spend"]["gpu_s"])]
         for c in report["cells"]],
        caption="found acc: seeds left out"))
    _print_best(report, console)
    grid = report["grid"]
    at = {(p["generations"], p["islands"]): p for p in grid["points"]}
    console.print(_table(
        "Generations x islands (exec accuracy / best speedup, seeds left out of both; mean "
        "over cells sharing a point)", ["generations"] + [f"islands {i}" for i in grid["islands"]],
        [[str(g)] + [compare.point_text(at[g, i]) if (g, i) in at else "-"
                     for i in grid["islands"]] for g in grid["generations"]]))
    labels = plots.spend_labels(backends)
    for measure, found in report["equal_compute"].items():
        console.print(_table(
            f"At equal compute: {labels[measure]} (each cell at the last generation it "
            "finished within the budget; -: it spent less in all)",
            ["cell"] + [compare.budget_heading(b) for b in found],
            [[cell] + [compare.budget_text(b, cell, meaningful.get(cell))
                       if cell in b["cells"] else "-" for b in found]
             for cell in sorted({c for b in found for c in {**b["cells"], **b["short"]}})],
            caption=f"gen G: found acc / best speedup, seeds left out of both; totals within "
                    f"{compare.BUDGET_TOLERANCE:.0%} are one budget (A-B)"))
    if report["equal_compute"]:
        console.print(f"[yellow]note: best speedup against compute: "
                      f"{noise.rising_best_note(report['noise_band'])}[/yellow]")
    for skipped in report["skipped"]:
        console.print(f"[yellow]skipped {skipped['cell']}: {skipped['reason']}[/yellow]")
    said: dict[str, list[str]] = {}
    for cell in report["cells"]:
        for note in cell["notes"]:
            said.setdefault(note, []).append(cell["cell"])
    for note, cells in said.items():
        console.print(f"[yellow]note ({', '.join(cells)}): {escape(note)}[/yellow]")
    _print_footer({"notes": report["noise_notes"], "figures": report["figures"]}, console)
    console.print(f"rows in pandas: evo.analysis.load_sweep({str(report['sweep'])!r})")


def _print_footer(report: dict[str, Any], console: Console) -> None:
    for note in report["notes"]:
        console.print(f"[yellow]note: {note}[/yellow]")
    for figure in report["figures"]:
        console.print(f"figure: {figure}")


def main(directory: Path | str, as_json: bool = False,
         torch_timings: Path | str | None = None) -> None:
    """Reports a campaign folder (with campaign.json) or a sweep folder (campaigns inside).

    A campaign without evaluations gets what ended it instead (its torch timings, if named,
    have nothing to be read against). Raises FileNotFoundError for a missing folder or
    timings file and ValueError for a folder holding no campaign, an unreadable
    campaign.json or timings file; the CLI turns each into a one-line error.
    """
    path = Path(directory)
    if not path.is_dir():
        raise FileNotFoundError(f"no results folder at {path}")
    if not (path / "campaign.json").is_file():
        if torch_timings:
            raise ValueError(f"--torch-timings reads against one campaign; {path} is a sweep "
                             "folder (report one of its campaigns)")
        report, show = compare.sweep_report(path, path / "figures"), print_sweep
    elif outcome.has_evaluations(path):
        report, show = campaign_report(analysis.load(path), torch_timings), print_campaign
    else:
        report, show = outcome.without_evaluations(path), print_without_evaluations
    report = analysis.to_json_value(report)
    if as_json:
        print(json.dumps(report, allow_nan=False))
    else:
        console = Console()
        if not console.is_terminal:  # a log file or pipe: keep whole columns, not 80 wide
            console = Console(width=200)
        show(report, console)
