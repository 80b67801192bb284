"""`evo report DIR --html [OUT]`, and the page `evo view` serves: one self-contained HTML file.

Per task: the best speedup over generations and wall time (against the baseline, and against
torch.compile where torch's timings join), the share of correct candidates, failure kinds,
LLM tokens and dollars, and the lineage of the best kernel (evo.analysis.html_lineage; the
best as evo.analysis.best names it: by correctness where timing means nothing, speedups drawn
over the seeds' noise band). Above
them the suite: accuracy against generations, pass@k against runs, spend. A sweep folder gets
its scaling plots (html_sweep); a campaign that scored nothing, what ended it (html_outcome).
Made from evo.analysis.snapshot: a folder still being written shows what is whole.
"""

from __future__ import annotations

import concurrent.futures
import datetime
from pathlib import Path

import pandas as pd

from evo.analysis import best, html_lineage, html_outcome, html_sweep, lineage, metrics, noise
from evo.analysis import snapshot, speedup_cells
from evo.analysis import timelines, torch_comparison
from evo.analysis.html_page import cards, document, esc, notes, number, table
from evo.analysis.plots import RUNS_LABELS, seconds_name
from evo.analysis.svg_charts import CORRECT_COLOR, Series, bar_chart, line_chart
from evo import results as results_io

DEFAULT_NAME = "report.html"


def write(directory: Path | str, out: Path | str | None = None,
          torch_timings: Path | str | None = None) -> Path:
    """Writes the page of a campaign or sweep folder (default DIR/report.html); returns its
    path. Raises FileNotFoundError / ValueError as `evo report` does, for a missing folder,
    one with no campaign, or a campaign whose rows do not read yet (one with no evaluation
    part at all gets the page of what ended it)."""
    path = Path(directory)
    if not path.is_dir():
        raise FileNotFoundError(f"no results folder at {path}")
    page, waiting_for = _render(path, snapshot.PartReader(), False, torch_timings)
    if waiting_for:
        raise ValueError(waiting_for)
    target = Path(out) if out else path / DEFAULT_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    results_io.atomic_write(target, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    return target


def render(directory: Path | str, *, live: bool = False, reader: snapshot.PartReader | None = None,
           torch_timings: Path | str | None = None) -> str:
    """Returns the page of a folder as it stands; a folder with nothing to show yet gets a
    page saying what it waits for (a live page fills in as parts land). `reader` keeps the
    parts read for the next call."""
    return _render(Path(directory), reader or snapshot.PartReader(), live, torch_timings)[0]


def _render(path: Path, reader: snapshot.PartReader, live: bool,
            torch_timings: Path | str | None) -> tuple[str, str]:
    """Returns the page and, when there is nothing to show yet, why ("" otherwise)."""
    stamp = snapshot.fingerprint(path)
    waiting_for = ""
    if (path / "campaign.json").is_file():
        title, body, waiting_for = _campaign(path, reader, live, torch_timings)
    else:
        try:
            title, body = html_sweep.page(path, reader)
        except (FileNotFoundError, ValueError) as error:
            waiting_for = str(error)
            title, body = f"Results {path.name}", _waiting(path, waiting_for, ())
    generated = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    made_by = "evo view" if live else "evo report --html"
    footer = f'<p class="meta">Made by KernelEvo ({made_by}) at {esc(generated)}.</p>'
    return document(title, body + footer, stamp, live), waiting_for


def _campaign(path: Path, reader: snapshot.PartReader, live: bool,
              torch_timings: Path | str | None) -> tuple[str, str, str]:
    """Returns the title and body of a campaign's page, and why it has nothing to show yet
    ("" otherwise)."""
    state = snapshot.read(path, reader)
    if state.results is not None:
        return (*campaign_page(state, torch_timings), "")
    if state.unscored and not state.skipped:
        return (*html_outcome.page(path, live), "")
    return (f"Campaign {path.name}", _waiting(path, state.waiting_for, state.skipped),
            f"campaign {path}: {state.waiting_for}")


def _waiting(path: Path, reason: str, skipped) -> str:
    return (f"<h1>{esc(path.name)}</h1><p class=\"meta\">{esc(path)}</p>"
            + notes([f"Nothing to show yet: {reason}"]
                    + [f"skipped a part that is not whole yet: {s}" for s in skipped]))


def campaign_page(state: snapshot.Snapshot,
                  torch_timings: Path | str | None = None) -> tuple[str, str]:
    """Returns the title and body of one campaign's page. The sources, strategies and traces
    its lineages show are read from their parts in the background meanwhile."""
    results = state.results
    tasks = metrics.task_table(results)
    rows = dict(tuple(results.evaluations.groupby("task")))
    chosen = best.of_results(results)
    with concurrent.futures.ThreadPoolExecutor(1) as background:
        fetched = background.submit(state.details.fetch, _lineage_rows(state, chosen, rows))
        try:
            versus = torch_comparison.comparison(results, torch_timings)
        except ValueError as error:
            if torch_timings:  # named by the user: theirs to fix
                raise
            versus = torch_comparison.without("unreadable", str(error))
        context = {**_charted(state, versus, rows), "chosen": chosen,
                   "bands": noise.seed_bands(results.evaluations)}
        body = [_header(state, tasks), _suite(results, tasks, chosen), _torch_table(versus)]
        fetched.result()
    body += [_task_section(i, name, row, context) for i, (name, row) in enumerate(tasks.iterrows())]
    return f"Campaign {results.name}", "".join(body)


def _lineage_rows(state: snapshot.Snapshot, chosen: dict, rows: dict) -> list[int]:
    """Returns the labels of the rows the page's lineages show."""
    return [label for name, found in chosen.items() if found is not None
            for label in lineage.walked_rows(rows[name], found["candidate_id"],
                                             state.details.parents)]


def _charted(state: snapshot.Snapshot, versus: dict, rows: dict) -> dict:
    """Returns what the task sections draw, computed once for all tasks."""
    results, calls = state.results, state.results.llm_calls
    over_torch = timelines.torch_speedups(results, versus)
    return {
        "best": metrics.best_speedup_by_generation(results),
        "torch": None if over_torch is None else metrics.best_so_far(results, over_torch),
        "wall": timelines.best_by_wall_time(results, state.started_at),
        "wall_torch": (timelines.best_by_wall_time(results, state.started_at, over_torch)
                       if over_torch is not None else {}),
        "correct": timelines.correct_rate_by_generation(results),
        "rows": rows,
        "calls": dict(tuple(calls.groupby("task"))) if "task" in calls else {},
        "details": state.detail,
    }


def _header(state: snapshot.Snapshot, tasks: pd.DataFrame) -> str:
    results, meta = state.results, state.results.meta
    device = meta.get("device", {}) if isinstance(meta.get("device"), dict) else {}
    spend = metrics.spend_by_generation(results).sum()
    suite = metrics.suite_metrics(tasks)
    generation = int(results.evaluations["generation"].max())
    configured = (meta.get("config", {}).get("search", {}) or {}).get("generations")
    facts = [f"folder {results.path}",
             f"device {device.get('name', '?')} ({device.get('backend', '?')})",
             f"started {meta.get('started_at', '?')}", f"commit {meta.get('git_commit', '?')}"]
    toc = " · ".join(f'<a href="#task-{i}">{esc(name)}</a>' for i, name in enumerate(tasks.index))
    wall = ("Wall time is when each part was written (its file's modification time) since "
            "campaign.json's started_at.")
    return (f"<h1>Campaign {esc(results.name)}</h1><p class=\"meta\">{esc(' · '.join(facts))}</p>"
            + cards([("generation reached" + (f" of {configured}" if configured else ""),
                      str(generation)),
                     ("tasks", str(len(tasks))),
                     ("execution accuracy", number(suite["exec_accuracy"], "%")),
                     ("speedup geomean (solved)", speedup_cells.cell(
                         suite["speedup_geomean"], "x", suite["timing_meaningful"])),
                     ("evaluations", number(spend["evaluations"])),
                     ("LLM tokens", number(spend["tokens"])), ("USD", number(spend["usd"], "$")),
                     (f"{seconds_name(results.backends)}-seconds", number(spend["gpu_s"]))])
            + notes(metrics.timing_notes(results) + noise.notes(results.evaluations)
                    + [f"skipped a part that is not whole yet: {s}" for s in state.skipped])
            + f'<p class="meta">{wall} Tasks: {toc}</p>')


def _suite(results: metrics.Results, tasks: pd.DataFrame, chosen: dict) -> str:
    accuracy = metrics.by_generation(results)
    runs = metrics.by_runs(results, tasks)
    x = list(accuracy.index)
    charts = [line_chart([Series("call accuracy", x, accuracy["call_accuracy"]),
                          Series("execution accuracy", x, accuracy["exec_accuracy"]),
                          Series("pass@1 (mean over islands)", x, accuracy["pass_at_1"])],
                         title="Accuracy vs generation (cumulative)", x_label="generation",
                         y_label="fraction of tasks", y_range=(-0.02, 1.02), integer_x=True),
              line_chart([Series("call pass@k", list(runs.index), runs["call_pass_at_k"]),
                          Series("pass@k (correct)", list(runs.index), runs["pass_at_k"])],
                         title="pass@k vs k (parallel scaling)",
                         x_label=RUNS_LABELS[results.independent_runs],
                         y_label="probability", y_range=(-0.02, 1.02), integer_x=True)]
    rows = [(name, number(t["candidates"]), number(t["correct_rate"], "%"),
             f"{int(t['runs_solved'])}/{int(t['runs'])}",
             speedup_cells.cell(t["best_speedup"], "x", t["timing_meaningful"]),
             *((chosen[name]["candidate_id"], chosen[name]["ranking"]) if chosen.get(name)
               else ("-", "no correct candidate")))
            for name, t in tasks.iterrows()]
    return ("<h2>Suite</h2>" + table(["task", "candidates", "correct rate", "runs solved",
                                      "fastest (speedup)", "best candidate", "ranked"], rows)
            + f'<div class="charts">{"".join(charts)}</div>')


WALL_UNITS = ((180.0, 1.0, "seconds"), (180 * 60.0, 60.0, "minutes"),
              (float("inf"), 3600.0, "hours"))
"""(up to this many seconds, seconds per unit, unit) for the wall-time axis."""


def _wall_chart(curve: pd.Series | None, over_torch: pd.Series | None, caveat: str) -> str:
    """Returns the best speedup against wall time (and over torch.compile when joined), in
    the unit that suits the campaign's length."""
    if curve is None:
        return line_chart([], title=f"Best speedup over wall time{caveat}", x_label="wall time",
                          y_label="speedup")
    _, per_unit, unit = next(u for u in WALL_UNITS if float(curve.index.max()) <= u[0])
    series = [Series(label, [t / per_unit for t in c.index], list(c.values), step=True)
              for label, c in (("vs baseline", curve),
                               (f"vs torch.compile ({timelines.TORCH_MODE})", over_torch))
              if c is not None]
    return line_chart(series, title=f"Best speedup over wall time{caveat}",
                      x_label=f"{unit} since the campaign started", y_label="speedup",
                      reference=1.0)


def _meaningful(task_row: pd.Series) -> bool:
    """Returns False only when the task's best kernel was timed without meaning (interpreter)."""
    value = task_row["timing_meaningful"]
    return bool(value) if pd.notna(value) else True


def _torch_table(versus: dict) -> str:
    if versus["status"] != "joined":
        return notes([f"torch comparison: {versus['message']}"])
    rows = [(c["task"], c["case"], number(c["best_us"]), number(c["baseline_us"]),
             *[number(c["torch_us"][m]) if c["torch_status"][m] == "ok" else c["torch_status"][m]
               for m in torch_comparison.MODES],
             *[number(c["speedup"][k], "x") for k in ("baseline",) + torch_comparison.MODES])
            for c in versus["cases"]]
    return ("<h2>Best kernels vs torch</h2>" + table(
        ["task", "case", "best us", "baseline us"] + [f"{m} us" for m in torch_comparison.MODES]
        + ["vs baseline"] + [f"vs {m}" for m in torch_comparison.MODES], rows, left=2))


def _task_section(index: int, task: str, row: pd.Series, context: dict) -> str:
    no_rows = pd.DataFrame(columns=["generation", "correct", "failure_kind"])
    rows = context["rows"].get(task, no_rows)
    x = context["best"].index
    speed = [Series("vs baseline", list(x), context["best"][task], step=True)]
    if context["torch"] is not None:
        speed.append(Series(f"vs torch.compile ({timelines.TORCH_MODE})", list(x),
                            context["torch"][task], step=True))
    caveat = "" if _meaningful(row) else " (interpreter timing)"
    band = context["bands"].get(task)
    kinds = timelines.failure_kinds_by_generation(rows, x)
    charts = [
        line_chart(speed, title=f"Best speedup so far{caveat}", x_label="generation",
                   y_label="speedup", reference=1.0, integer_x=True,
                   band=None if band is None else (band.low, band.high)),
        _wall_chart(context["wall"].get(task), context["wall_torch"].get(task), caveat),
        line_chart([Series("correct", list(x), context["correct"][task])],
                   title="Correct rate per generation", x_label="generation",
                   y_label="share of candidates", y_range=(-0.02, 1.02), integer_x=True),
        bar_chart(list(kinds.index), {k: list(kinds[k]) for k in kinds.columns},
                  title="Outcomes per generation", x_label="generation", y_label="candidates",
                  colors={"correct": CORRECT_COLOR}),
    ]
    calls = context["calls"].get(task)
    spend = None if calls is None else metrics.llm_spend(calls).reindex(x, fill_value=0).cumsum()
    if spend is not None:
        charts += [line_chart([Series("tokens", list(spend.index), spend["tokens"])],
                              title="LLM tokens (cumulative)", x_label="generation",
                              y_label="tokens", integer_x=True),
                   line_chart([Series("USD", list(spend.index), spend["usd"])],
                              title="LLM dollars (cumulative)", x_label="generation",
                              y_label="USD", integer_x=True)]
    spent = ("no LLM calls for this task (offline operators): no tokens or dollars"
             if spend is None else f"LLM: {number(spend['tokens'].iloc[-1])} tokens, "
                                   f"{number(spend['usd'].iloc[-1], '$')}")
    fastest = speedup_cells.cell(row["best_speedup"], "x", row["timing_meaningful"])
    facts = (f"{number(row['candidates'])} candidates · correct {number(row['correct_rate'], '%')}"
             f" · runs solved {int(row['runs_solved'])}/{int(row['runs'])} · best {fastest}"
             f" · {spent}")
    chosen = context["chosen"].get(task)
    if chosen is None:
        lineage_html, ranked = ("<p>No correct kernel yet: its lineage appears once there is "
                                "one.</p>"), ""
    else:
        suite = row["suite"] if isinstance(row["suite"], str) else None
        lineage_html = html_lineage.section(index, task, rows, chosen["candidate_id"], suite,
                                            context["details"])
        ranked = f" ({chosen['ranking']})"
    return (f'<section class="task" id="task-{index}"><h2>{esc(task)}</h2>'
            f'<p class="meta">{esc(facts)}</p><div class="charts">{"".join(charts)}</div>'
            f"<h3>Lineage of the best kernel{esc(ranked)}</h3>{lineage_html}</section>")
