"""`evo report DIR --html`: one self-contained page per campaign or sweep, its numbers, its
lineages and diffs, and a folder being written that never breaks it (no browser here: see
test_view_browser.py for the page in Chromium)."""

import json
import os
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evo import cli, ending, records
from evo.analysis import html_lineage, html_report, lineage, metrics, outcome, plots, snapshot
from evo.analysis import timelines, torch_comparison
from evo.analysis.html_page import esc
from synthetic_results import evaluation, example_campaign, llm_call, write_campaign

BASELINE = lineage.builtin_baseline("vector_add", "builtin")
GPU = "NVIDIA H200"


def _evo(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def _variant(source: str, old: str, new: str) -> str:
    assert old in source
    return source.replace(old, new, 1)


def _lineage_campaign(folder, strategy="offline: num_warps 4 -> 8", seed_row=False):
    """vector_add on one island: the baseline (a seed, no row unless `seed_row`) -> a (gen 1)
    -> b (gen 2, the best) and c (gen 2, a crossover of a and a failed reflector child f of
    gen 1)."""
    a_src = _variant(BASELINE, '("num_warps", 4)', '("num_warps", 8)')
    b_src = _variant(a_src, '("BLOCK_SIZE", 1024)', '("BLOCK_SIZE", 2048)')
    f_src = a_src + "\nbroken = (\n"
    seed_id = records.candidate_id(BASELINE)

    def row(generation, source, parents, speedup, operator, **fields):
        base = evaluation("vector_add", 0, generation, call_ok=speedup is not None,
                          correct=speedup is not None, speedup=speedup, operator=operator)
        return {**base, "candidate_id": records.candidate_id(source), "source": source,
                "parent_ids": parents, "strategy": fields.pop("strategy", strategy), **fields}

    a = row(1, a_src, [seed_id], 1.2, "optimizer")
    f = row(1, f_src, [seed_id], None, "reflector", error_trace="SyntaxError: '(' was never closed")
    b = row(2, b_src, [a["candidate_id"]], 1.8, "optimizer", strategy="Strategy: a bigger block")
    c = row(2, a_src + "\nMERGED = True\n", [a["candidate_id"], f["candidate_id"]], 1.1,
            "crossover")
    seeds = [row(0, BASELINE, [], 1.0, "seed", strategy="")] if seed_row else []
    write_campaign(folder, seeds + [a, f, b, c], islands=1, tasks=("vector_add",))
    return folder, {"a": a, "b": b, "c": c, "f": f, "seed": seed_id}


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    folder = example_campaign(tmp_path_factory.mktemp("html") / "c")
    return folder, html_report.render(folder)


def test_page_is_one_self_contained_file(example):
    _, page = example
    assert page.startswith("<!DOCTYPE html>")
    assert "connect-src 'self'" in page and "default-src 'none'" in page  # the CSP forbids the rest
    for pattern in (r'\ssrc=', r'href="(?!#)', r"url\(", r"@import", r"<link\b"):
        assert not re.search(pattern, page), pattern
    links = set(re.findall(r"https?://[^\s\"'<]+", page))
    assert links <= {"http://www.w3.org/2000/svg"}, links  # the SVG namespace, never fetched


def test_page_has_suite_charts_and_a_section_per_task(example):
    _, page = example
    for task in ("add", "softmax", "matmul"):
        assert f"<h2>{task}</h2>" in page
    for title in ("Accuracy vs generation (cumulative)", "pass@k vs k (parallel scaling)",
                  "Best speedup so far", "Best speedup over wall time",
                  "Correct rate per generation", "Outcomes per generation"):
        assert title in page, title
    charts = page.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"')
    assert charts == 2 + 3 * 4 + 2 * 2  # suite, 4 per task, 2 more where LLM calls were made
    assert "LLM tokens (cumulative)" in page and "LLM dollars (cumulative)" in page
    assert "No correct kernel yet" in page  # matmul
    assert "2.50x" in page  # add's best
    assert "timing_meaningful=False" in page


def test_failure_kinds_and_correct_rate_come_from_the_rows(example):
    folder, _ = example
    state = snapshot.read(folder)
    rows = state.results.evaluations
    kinds = timelines.failure_kinds_by_generation(rows[rows["task"] == "add"],
                                                  metrics.generations(state.results))
    assert kinds.to_dict("index") == {0: {"correct": 1, "compile_error": 0, "mismatch": 0},
                                      1: {"correct": 1, "compile_error": 1, "mismatch": 1},
                                      2: {"correct": 1, "compile_error": 1, "mismatch": 0}}
    rate = timelines.correct_rate_by_generation(state.results)
    assert rate["add"].tolist()[1:] == pytest.approx([1 / 3, 1 / 2])


def test_accuracy_curves_are_metrics_by_generation(example):
    folder, _ = example
    results = metrics.load(folder)
    expected = metrics.by_generation(results)[["call_accuracy", "exec_accuracy", "pass_at_1"]]
    got = metrics.by_generation(snapshot.read(folder).results)[list(expected.columns)]
    assert got.to_numpy().ravel().tolist() == pytest.approx(expected.to_numpy().ravel().tolist())


def test_lineage_walks_parents_to_the_baseline_with_each_diff(tmp_path):
    folder, ids = _lineage_campaign(tmp_path / "c")
    state = snapshot.read(folder)
    found = lineage.ancestry(state.results.evaluations, ids["b"]["candidate_id"], BASELINE,
                             state.detail)
    assert list(found.steps) == [ids["b"]["candidate_id"], ids["a"]["candidate_id"], ids["seed"]]
    assert found.steps[ids["seed"]].origin == "baseline"
    assert found.steps[ids["a"]["candidate_id"]].parents == (ids["seed"],)
    page = html_report.render(folder)
    assert '<div class="lineage" data-task="vector_add">' in page
    assert "baseline (seed)" in page and "g2 i0 optimizer 1.80x" in page
    small = "    &quot;small&quot;: ((&quot;BLOCK_SIZE&quot;, "
    assert f'<span class="del">-{small}1024)' in page and f'<span class="add">+{small}2048)' in page
    assert '<span class="del">-    &quot;large&quot;' not in page  # context, not changed
    assert "Strategy: a bigger block" in page
    assert f"Final source ({ids['b']['candidate_id']})" in page


def test_a_crossover_lineage_branches_and_shows_the_failed_parent(tmp_path):
    folder, ids = _lineage_campaign(tmp_path / "c")
    state = snapshot.read(folder)
    crossed = lineage.ancestry(state.results.evaluations, ids["c"]["candidate_id"], BASELINE,
                               state.detail)
    assert set(crossed.steps) == {ids["c"]["candidate_id"], ids["a"]["candidate_id"],
                                  ids["f"]["candidate_id"], ids["seed"]}
    assert crossed.steps[ids["c"]["candidate_id"]].parents == (ids["a"]["candidate_id"],
                                                                ids["f"]["candidate_id"])
    # The page's lineage is of the best (b); c's own lineage, rendered, branches once.
    from evo.analysis import html_lineage

    block = html_lineage.section(0, "vector_add", state.results.evaluations,
                                 ids["c"]["candidate_id"], "builtin", state.detail)
    assert block.count('class="branch"') == 1 and "crossed with:" in block
    assert "SyntaxError: &#x27;(&#x27; was never closed" in block
    assert "continues from baseline (seed)" in block  # the baseline is reached twice, drawn once


def test_lineage_stops_at_its_cap_and_says_so(tmp_path):
    rows, parent, source = [], records.candidate_id(BASELINE), BASELINE
    for generation in range(1, 8):
        source = source + f"\nSTEP = {generation}\n"
        row = evaluation("vector_add", 0, generation, call_ok=True, correct=True,
                         speedup=1.0 + generation / 10)
        rows.append({**row, "candidate_id": records.candidate_id(source), "source": source,
                     "parent_ids": [parent]})
        parent = records.candidate_id(source)
    write_campaign(tmp_path / "c", rows, islands=1)
    state = snapshot.read(tmp_path / "c")
    found = lineage.ancestry(state.results.evaluations, parent, BASELINE, state.detail, limit=3)
    assert len(found.steps) == 3 and found.left_out == 1


def test_model_text_is_escaped_not_run(tmp_path):
    folder, _ = _lineage_campaign(tmp_path / "c", strategy='<script>alert("x")</script><img src=x>')
    page = html_report.render(folder)
    assert "<script>alert" not in page and "<img src=x>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own


def test_truncated_part_is_skipped_and_named_until_whole(tmp_path):
    folder, ids = _lineage_campaign(tmp_path / "c")
    whole = (folder / "evaluations" / "part-00002.parquet").read_bytes()
    landing = folder / "evaluations" / "part-00003.parquet"
    landing.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="not a readable Parquet part"):
        metrics.load(folder)  # the text report refuses; the page does not
    reader = snapshot.PartReader()
    page = html_report.render(folder, live=True, reader=reader)
    assert "skipped a part that is not whole yet: evaluations/part-00003.parquet" in page
    assert "g2 i0 optimizer 1.80x" in page
    landing.write_bytes(whole)
    page = html_report.render(folder, live=True, reader=reader)
    assert "not whole yet" not in page


def test_a_seed_row_is_drawn_as_the_starting_kernel_of_the_lineage(tmp_path):
    folder, ids = _lineage_campaign(tmp_path / "c", seed_row=True)
    page = html_report.render(folder)
    tree = page[page.index('<div class="tree">'):page.index('<div class="step-detail"')]
    nodes = re.findall(r'<button type="button" class="node[^"]*"[^>]*>([^<]*)</button>', tree)
    assert nodes == ["g0 i0 seed (starting kernel) 1.00x", "g1 i0 optimizer 1.20x",
                     "g2 i0 optimizer 1.80x"]  # oldest first, down to the best
    assert "baseline (seed)" not in page  # the seed has a row: it is shown as that row
    seed_detail = re.search(r'<div class="step-detail" id="detail-0-2" hidden>(.*?)</div>',
                            page, re.S)
    assert esc(html_lineage.SEED_ORIGIN) in seed_detail.group(1)
    assert f"{esc(ids['seed'])}" in seed_detail.group(1)


def test_folder_without_readable_rows_gets_a_waiting_page(tmp_path):
    assert "Nothing to show yet" in html_report.render(tmp_path)
    (tmp_path / "campaign.json").write_text(json.dumps({"config": {}}))
    (tmp_path / "evaluations").mkdir()
    (tmp_path / "evaluations" / "part-00000.parquet").write_bytes(b"PAR1 half written")
    page = html_report.render(tmp_path, live=True)
    assert "no evaluation rows yet" in page and 'data-live="1"' in page
    assert "skipped a part that is not whole yet: evaluations/part-00000.parquet" in page
    with pytest.raises(ValueError, match="no evaluation rows yet"):
        html_report.write(tmp_path)


def _failed_call(minute, kind, error):
    return {**llm_call("add", 0, 0, 0, 0.0), "success": False, "failure_kind": kind,
            "error": error, "finished_at": pd.Timestamp(f"2026-01-01 00:{minute:02d}", tz="UTC")}


def _campaign_without_evaluations(folder):
    calls = [_failed_call(1, "server_error", "HTTP 500 <html>bad gateway</html>"),
             _failed_call(2, "no_code_block", "no_code_block: first"),
             _failed_call(3, "no_code_block", "no_code_block: latest\nsecond line"),
             llm_call("add", 0, 0, 10, 0.0)]
    return write_campaign(folder, [], calls, islands=1, name="dead")


def test_a_campaign_without_evaluations_gets_a_page_of_what_ended_it(tmp_path):
    folder = _campaign_without_evaluations(tmp_path / "c")
    ending.record(folder, "llm_failures", "stopped: every LLM call of generation 0 failed",
                  ["no_code_block: 2 calls"])
    result = _evo("report", folder, "--html")
    assert result.exit_code == 0, result.output
    page = (folder / "report.html").read_text()
    assert "Campaign dead" in page and "No candidate was scored" in page
    assert "Nothing to show yet" not in page and "no evaluation rows yet" not in page
    assert "stopped: every LLM call of generation 0 failed (at " in page
    assert "<li>no_code_block: 2 calls</li>" in page
    report = outcome.without_evaluations(folder)  # the text report's own numbers, drawn
    assert f"LLM calls: {report['llm']['calls']}, {report['llm']['failed']} failed" in page
    assert list(report["llm"]["kinds"]) == ["no_code_block", "server_error"]
    cells = re.findall(r'<td class="l">([^<]*)</td><td class="l">(\d+)</td>', page)
    assert cells == [("no_code_block", "2"), ("server_error", "1")]  # the commonest first
    for failed in report["llm"]["kinds"].values():
        assert f'<pre class="error">{esc(failed["example"])}</pre>' in page  # the latest, whole
    assert "<html>bad gateway" not in page  # an error is data, escaped


def test_a_campaign_without_evaluations_and_no_recorded_end_says_it_may_still_run(tmp_path):
    folder = _campaign_without_evaluations(tmp_path / "c")
    written = html_report.write(folder).read_text()
    assert "No candidate was scored" in written
    assert "campaign.json records no end of a run: it is still running, or it was killed" in written
    live = html_report.render(folder, live=True)
    assert "Nothing to show yet: waiting for the first generation" in live
    assert "No candidate was scored" not in live and "LLM calls: 4, 3 failed" in live
    ending.record(folder, ending.FATAL, "the fitness sandbox is unavailable: no bwrap")
    ended = html_report.render(folder, live=True)
    assert "No candidate was scored" in ended and "no bwrap (at " in ended
    assert "waiting for the first generation" not in ended


def test_a_campaign_without_evaluations_says_whether_its_llm_calls_failed(tmp_path):
    offline = html_report.render(write_campaign(tmp_path / "offline", [], [], islands=1))
    assert "No LLM call was recorded." in offline and "failure kind" not in offline
    calls = [llm_call("add", 0, 0, 10, 0.0), llm_call("add", 0, 0, 20, 0.0)]
    answered = html_report.render(write_campaign(tmp_path / "answered", [], calls, islands=1))
    assert "2 calls, none failed." in answered and "failure kind" not in answered


def test_the_pass_at_k_axis_says_whether_islands_are_independent_runs(tmp_path, example):
    _, independent = example
    assert esc(plots.RUNS_LABELS[True]) in independent and "k (runs)" not in independent
    rows = [evaluation("add", i, g, call_ok=True, correct=True, speedup=1.5)
            for i in range(2) for g in range(2)]
    migrating = html_report.render(write_campaign(tmp_path / "m", rows, islands=2,
                                                  migration_interval=1))
    assert esc(plots.RUNS_LABELS[False]) in migrating
    assert esc(plots.RUNS_LABELS[True]) not in migrating


def _interpreter_rows(islands):
    return [evaluation("add", i, g, call_ok=True, correct=g > 0, speedup=1.5, meaningful=False)
            for i in range(islands) for g in range(3)]


def test_fitness_seconds_are_called_eval_seconds_on_the_interpreter(tmp_path, example):
    _, mixed = example  # add is timed on a GPU, softmax under the interpreter
    assert '<span>GPU/eval-seconds</span>' in mixed
    page = html_report.render(write_campaign(tmp_path / "c", _interpreter_rows(1), islands=1))
    assert "<span>eval-seconds</span>" in page and "GPU-s" not in page
    for name, islands in (("islands-1", 1), ("islands-2", 2)):
        write_campaign(tmp_path / "sweep" / name, _interpreter_rows(islands), islands=islands)
    sweep = html_report.render(tmp_path / "sweep")
    assert "Accuracy vs eval-seconds" in sweep and "<th>eval-s</th>" in sweep
    assert "At equal compute: eval-seconds" in sweep and "GPU-s" not in sweep


def test_the_accuracy_vs_spend_figure_names_fitness_seconds_by_backend():
    curve = pd.DataFrame({"exec_accuracy": [0.5, 1.0], "evaluations": [1, 2], "tokens": [0, 0],
                          "usd": [0.0, 0.0], "gpu_s": [0.3, 0.6]})
    for backends, name in ((["interpreter"], "eval-seconds"), (["cuda"], "GPU-seconds"),
                           ([], "GPU-seconds"), (["rocm", "interpreter"], "GPU/eval-seconds")):
        figure = plots.against_spend({"c": curve}, backends=backends)
        assert [axes.get_xlabel() for axes in figure.axes] == ["evaluations", name]


def test_wall_time_is_when_each_part_was_written(tmp_path):
    folder, _ = _lineage_campaign(tmp_path / "c")
    meta = json.loads((folder / "campaign.json").read_text())
    meta["started_at"] = "2026-01-01T00:00:00+00:00"
    (folder / "campaign.json").write_text(json.dumps(meta))
    start = 1767225600.0  # that moment, in epoch seconds
    os.utime(folder / "evaluations" / "part-00001.parquet", (start + 60, start + 60))
    os.utime(folder / "evaluations" / "part-00002.parquet", (start + 300, start + 300))
    state = snapshot.read(folder)
    curve = timelines.best_by_wall_time(state.results, state.started_at)["vector_add"]
    assert list(curve.index) == [60.0, 300.0, 300.0] and list(curve) == [1.2, 1.8, 1.8]


def _torch_campaign(folder):
    rows = [{**evaluation("vector_add", 0, 1, call_ok=True, correct=True, speedup=2.0),
             "case_names": ["a", "b"], "latency_us": [10.0, 20.0], "ref_latency_us": [20.0, 40.0],
             "device": GPU},
            {**evaluation("vector_add", 0, 2, call_ok=True, correct=True, speedup=4.0),
             "candidate_id": "second", "case_names": ["a", "b"], "latency_us": [5.0, 10.0],
             "ref_latency_us": [20.0, 40.0], "device": GPU}]
    write_campaign(folder, rows, islands=1)
    timings = [{"task": "vector_add", "case": case, "mode": mode, "device": GPU, "status": "ok",
                "median_us": us, "floor_us": 1.0, "copy_floor_us": 1.0, "bound": "memory",
                "torch_op": "reference", "torch_version": "2.9", "copy_gbs": 3000.0}
               for case, us in (("a", 30.0), ("b", 15.0)) for mode in torch_comparison.MODES]
    pq.write_table(pa.Table.from_pylist(timings), folder / torch_comparison.TIMINGS_FILE)
    return folder


def test_speedup_over_torch_compile_is_drawn_per_generation(tmp_path):
    folder = _torch_campaign(tmp_path / "c")
    state = snapshot.read(folder)
    versus = torch_comparison.comparison(state.results)
    speedups = timelines.torch_speedups(state.results, versus)
    curve = metrics.best_so_far(state.results, speedups)
    # gen 1: sqrt(30/10 * 15/20); gen 2: sqrt(30/5 * 15/10)
    assert curve["vector_add"].tolist()[1:] == pytest.approx([1.5, 3.0])
    wall = timelines.best_by_wall_time(state.results, state.started_at, speedups)["vector_add"]
    assert list(wall)[-1] == pytest.approx(3.0)
    page = html_report.render(folder)
    assert page.count('data-label="vs torch.compile (default)"') == 2  # generations, wall time
    assert "Best kernels vs torch" in page


def test_cli_writes_the_page_where_asked(tmp_path):
    folder, _ = _lineage_campaign(tmp_path / "c")
    result = _evo("report", folder, "--html")
    assert result.exit_code == 0, result.output
    assert (folder / "report.html").read_text().startswith("<!DOCTYPE html>")
    result = _evo("report", folder, "--html", tmp_path / "out" / "page.html")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "page.html").stat().st_size > 1000
    result = _evo("report", folder, "--html", "--json")
    assert result.exit_code == 2 and "give one" in result.output
    result = _evo("report", tmp_path / "missing", "--html")
    assert result.exit_code == 2 and "no results folder" in result.output


def test_sweep_folder_page_has_the_scaling_plots(tmp_path):
    for name, islands, speedup in (("islands-1", 1, 1.5), ("islands-2", 2, 2.0)):
        rows = [evaluation("add", i, g, call_ok=True, correct=g > 0, speedup=speedup)
                for i in range(islands) for g in range(3)]
        write_campaign(tmp_path / name, rows, islands=islands, name=name)
        (tmp_path / name / "sweep_cell.json").write_text(json.dumps(
            {"cell": name, "overrides": {"search.islands": islands}, "status": "done"}))
    (tmp_path / "not-started").mkdir()
    (tmp_path / "not-started" / "campaign.json").write_text("{}")
    written = html_report.write(tmp_path)
    page = written.read_text()
    assert written == tmp_path / "report.html"
    for text in ("Sweep ", "Accuracy vs generation", "Best speedup vs generation",
                 "Accuracy vs evaluations", "Best speedup vs GPU-seconds", "Accuracy vs islands",
                 "Generations x islands", "Best candidate per task (over every cell)",
                 "At equal compute", "search.islands", "islands-2",
                 "not-started: no evaluation rows yet"):
        assert text in page, text


def test_charts_escape_their_labels_and_say_when_empty():
    from evo.analysis import svg_charts

    series = svg_charts.Series('<b>"task"</b>', [0, 1, 2], [1.0, float("nan"), 2.0])
    chart = svg_charts.line_chart([series], title="a & b", x_label="x", y_label="y")
    assert "<b>" not in chart and "&lt;b&gt;&quot;task&quot;&lt;/b&gt;" in chart
    assert "a &amp; b" in chart
    assert chart.count("M") >= 2  # the NaN leaves a gap: the pen lifts and starts again
    empty = svg_charts.bar_chart([0, 1], {"correct": [0, 0]}, title="t", x_label="x", y_label="y")
    assert "no data yet" in empty
    assert [svg_charts._label(v) for v in (0.5, 1500, 25_000, 40_000_000)] == \
        ["0.5", "1,500", "25k", "40M"]
