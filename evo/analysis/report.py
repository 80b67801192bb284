"""`evo report DIR [--json]`: the numbers and figures of a campaign or a sweep folder.

The JSON and the printed tables come from one dict, so what a script reads is what a person
sees. Figures land in DIR/figures either way. A campaign timed on a GPU is also read against
torch's own timings of the same cases when they exist (evo.analysis.torch_comparison).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evo.analysis import metrics as analysis
from evo.analysis import compare
from evo.analysis import plots
from evo.analysis import torch_comparison


def campaign_report(results: analysis.Results,
                    torch_timings: Path | str | None = None) -> dict[str, Any]:
    """Returns every metric of one campaign, and its comparison with torch, and writes its
    figures; `torch_timings` names the timings file (default: DIR/torch_timings.parquet)."""
    tasks = analysis.task_table(results)
    generations = analysis.by_generation(results)
    runs = analysis.by_runs(results, tasks)
    best = analysis.best_speedup_by_generation(results)
    solved_curves = analysis.pass_curves(tasks, "runs_solved")
    called_curves = analysis.pass_curves(tasks, "runs_called")
    rows = results.search_rows
    timed = rows.loc[rows["speedup"].notna(), "timing_meaningful"].astype(bool)
    meaningful = bool(timed.all()) if len(timed) else None  # None: nothing timed yet
    figures_dir = results.path / "figures"
    figures = [
        plots.accuracy_vs_generation(generations, figures_dir / "accuracy_vs_generation.png"),
        plots.pass_at_k(runs, solved_curves, figures_dir / "pass_at_k.png"),
        plots.best_speedup_by_generation(best, meaningful is not False,
                                         figures_dir / "best_speedup_by_generation.png"),
        plots.speedup_distribution(rows.loc[rows["correct"].astype(bool), "speedup"].dropna(),
                                   meaningful is not False, figures_dir / "speedup_distribution.png"),
        plots.accuracy_vs_spend({results.name: generations}, figures_dir / "accuracy_vs_spend.png"),
    ]
    versus_torch = torch_comparison.comparison(results, torch_timings)
    if versus_torch["status"] == "joined":
        figures.append(plots.versus_torch(versus_torch["cases"], torch_comparison.MODES,
                                          figures_dir / "versus_torch.png"))
    suite = analysis.suite_metrics(tasks)
    suite["spend"] = {m: float(generations[m].iloc[-1]) for m in analysis.SPEND_MEASURES}
    suite["timing_meaningful"] = meaningful
    task_fields = ["suite", "difficulty", "candidates", "call_rate", "correct_rate", "runs",
                   "runs_called", "runs_solved", "best_speedup", "roofline_fraction",
                   "best_candidate_id", "timing_meaningful"]
    report = {
        "campaign": results.name,
        "path": str(results.path),
        "suite": suite,
        "tasks": {name: {**{f: row[f] for f in task_fields},
                         "pass_at_k": solved_curves[name], "call_pass_at_k": called_curves[name]}
                  for name, row in tasks.iterrows()},
        "by_generation": generations.reset_index().to_dict("records"),
        "by_runs": runs.reset_index().to_dict("records"),
        "best_speedup_by_generation": {task: best[task].tolist() for task in best.columns},
        "by_difficulty": analysis.by_difficulty(tasks),
        "torch": versus_torch,
        "notes": analysis.timing_notes(results),
        "figures": [str(p) for p in figures],
    }
    return analysis.to_json_value(report)


def _num(value: Any, kind: str = "f") -> str:
    """Formats a metric for a table: percent, speedup (x), or plain; '-' for missing."""
    if value is None:
        return "-"
    if kind == "%":
        return f"{100 * value:.1f}%"
    if kind == "x":
        return f"{value:.2f}x"
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.3g}"


def _table(title: str, columns: list[str], rows: list[list[str]], caption: str = "") -> Table:
    table = Table(title=title, title_justify="left", caption=caption or None,
                  caption_justify="left")
    for column in columns:
        table.add_column(column, justify="left" if column in ("task", "cell") else "right")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))  # names are data, not rich markup
    return table


def _suite_row(suite: dict[str, Any]) -> list[str]:
    return [_num(suite["call_accuracy"], "%"), _num(suite["exec_accuracy"], "%"),
            _num(suite["pass_at_k"].get("1"), "%"), _num(suite["speedup_mean"], "x"),
            _num(suite["speedup_geomean"], "x")] + [_num(v, "%") for v in suite["fast_p"].values()]


SUITE_COLUMNS = ["call acc", "exec acc", "pass@1", "speedup mean", "speedup geomean",
                 "fast_0", "fast_1", "fast_1.5", "fast_2"]


def print_campaign(report: dict[str, Any], console: Console) -> None:
    """Prints a campaign report as tables."""
    tasks = [[name, _num(t["difficulty"]), _num(t["candidates"]), _num(t["call_rate"], "%"),
              _num(t["correct_rate"], "%"), f"{t['runs_solved']}/{t['runs']}",
              _num(t["pass_at_k"].get("1"), "%"), _num(t["pass_at_k"].get(str(t["runs"])), "%"),
              _num(t["best_speedup"], "x") + ("" if t["timing_meaningful"] is not False else "*"),
              _num(t["roofline_fraction"], "%")]
             for name, t in report["tasks"].items()]
    console.print(_table(f"Campaign {report['campaign']}: tasks",
                         ["task", "difficulty", "candidates", "call rate", "correct rate",
                          "runs solved", "pass@1", "pass@n", "best speedup", "roofline"], tasks,
                         caption="* timed under the interpreter: not meaningful"
                         if any(t["timing_meaningful"] is False for t in report["tasks"].values())
                         else ""))
    console.print(_table("Suite", SUITE_COLUMNS, [_suite_row(report["suite"])]))
    console.print(_table("By generation (cumulative)",
                         ["gen", "call acc", "exec acc", "pass@1", "speedup geomean", "fast_1",
                          "evals", "tokens", "USD", "GPU-s"],
                         [[str(g["generation"]), _num(g["call_accuracy"], "%"),
                           _num(g["exec_accuracy"], "%"), _num(g["pass_at_1"], "%"),
                           _num(g["speedup_geomean"], "x"), _num(g["fast_1"], "%"),
                           _num(g["evaluations"]), _num(g["tokens"]), f"{g['usd']:.4f}",
                           _num(g["gpu_s"])] for g in report["by_generation"]]))
    console.print(_table("By runs k (parallel scaling)",
                         ["k", "pass@k", "call pass@k", "expected best speedup"],
                         [[str(r["k"]), _num(r["pass_at_k"], "%"), _num(r["call_pass_at_k"], "%"),
                           _num(r["expected_best_speedup"], "x")] for r in report["by_runs"]]))
    console.print(_table("By difficulty", ["difficulty", "tasks"] + SUITE_COLUMNS,
                         [[d, str(s["tasks"])] + _suite_row(s)
                          for d, s in report["by_difficulty"].items()]))
    _print_torch(report["torch"], console)
    _print_footer(report, console)


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
        return _num(case["torch_us"][mode]) if status == "ok" else status.replace("_", " ")

    rows = [[c["task"], c["case"], _num(c["best_us"]), _num(c["baseline_us"])]
            + [latency(c, m) for m in modes]
            + [_num(c["speedup"][k], "x") for k in ["baseline"] + modes]
            + [_num(c["roofline"], "%"), _num(c["copy_bandwidth"], "%")]
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
        name = {"baseline": "the baseline", "eager": "torch eager",
                "default": "torch.compile default",
                "max-autotune-no-cudagraphs": "torch.compile max-autotune-no-cudagraphs"}[key]
        worst = against["worst"]
        console.print(f"best vs {name}: geomean {_num(against['geomean'], 'x')} over "
                      f"{against['cases']} cases" + (
                          f", worst {_num(worst['speedup'], 'x')} ({worst['task']} "
                          f"{worst['case']})" if worst else ""))
    for op, label in torch_comparison.LIBRARIES.items():
        against = summary["libraries"][op]
        if against["cases"]:
            console.print(f"{label} (torch eager): geomean {_num(against['geomean'], 'x')} "
                          f"over {against['cases']} cases, worst "
                          f"{_num(against['worst']['speedup'], 'x')}")
    memory = summary["memory_bound"]
    console.print(f"memory-bound cases at >= {_num(memory['bar'], '%')} of the measured copy "
                  f"bandwidth ({_num(versus['copy_gbs'])} GB/s): {memory['at_copy_bandwidth']} "
                  f"of {memory['cases']}")


def print_sweep(report: dict[str, Any], console: Console) -> None:
    """Prints a sweep report: one row per campaign, then each unit of equal compute."""
    keys = sorted({k for cell in report["cells"] for k in cell["overrides"]})
    console.print(_table(f"Sweep {report['sweep']}", ["cell", *keys, "status"] + SUITE_COLUMNS
                         + ["evals", "tokens", "USD", "GPU-s"],
                         [[c["cell"], *[str(c["overrides"].get(k, "-")) for k in keys], c["status"]]
                          + _suite_row(c["suite"])
                          + [_num(c["spend"][m]) for m in ("evaluations", "tokens")]
                          + [f"{c['spend']['usd']:.4f}", _num(c["spend"]["gpu_s"])]
                          for c in report["cells"]]))
    for measure, comparison in report["equal_compute"].items():
        console.print(_table(f"At equal compute: {measure} <= {_num(comparison['budget'])} "
                             "(each cell at the last generation it finished within it)",
                             ["cell", "generation", "spent", "exec acc", "pass@1", "speedup geomean"],
                             [[cell, _num(m["generation"]), _num(m["spent"]),
                               _num(m["exec_accuracy"], "%"), _num(m["pass_at_1"], "%"),
                               _num(m["speedup_geomean"], "x")]
                              for cell, m in comparison["cells"].items()]))
    for skipped in report["skipped"]:
        console.print(f"[yellow]skipped {skipped['cell']}: {skipped['reason']}[/yellow]")
    for cell in report["cells"]:
        for note in cell["notes"]:
            console.print(f"[yellow]note ({cell['cell']}): {note}[/yellow]")
    _print_footer({"notes": [], "figures": report["figures"]}, console)


def _print_footer(report: dict[str, Any], console: Console) -> None:
    for note in report["notes"]:
        console.print(f"[yellow]note: {note}[/yellow]")
    for figure in report["figures"]:
        console.print(f"figure: {figure}")


def main(directory: Path | str, as_json: bool = False,
         torch_timings: Path | str | None = None) -> None:
    """Reports a campaign folder (with campaign.json) or a sweep folder (campaigns inside).

    Raises FileNotFoundError for a missing folder or timings file and ValueError for a
    folder holding no campaign or no evaluations, or an unreadable timings file; the CLI
    turns each into a one-line error.
    """
    path = Path(directory)
    if not path.is_dir():
        raise FileNotFoundError(f"no results folder at {path}")
    is_campaign = (path / "campaign.json").is_file()
    if is_campaign:
        report = campaign_report(analysis.load(path), torch_timings)
    elif torch_timings:
        raise ValueError(f"--torch-timings reads against one campaign; {path} is a sweep "
                         "folder (report one of its campaigns)")
    else:
        report = analysis.to_json_value(compare.sweep_report(path, path / "figures"))
    if as_json:
        print(json.dumps(report, allow_nan=False))
    else:
        console = Console()
        if not console.is_terminal:  # a log file or pipe: keep whole columns, not 80 wide
            console = Console(width=200)
        (print_campaign if is_campaign else print_sweep)(report, console)
