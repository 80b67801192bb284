"""`evo report`: tables, --json shape, figures on disk, sweep folders, clear errors."""

import json
import re

import matplotlib.image
import pandas as pd
import pytest
from typer.testing import CliRunner

from evo import cli, ending
from evo.analysis import html_report
from synthetic_results import evaluation, example_campaign, llm_call, write_campaign

FIGURES = ("accuracy_vs_generation.png", "pass_at_k.png", "best_speedup_by_generation.png",
           "speedup_distribution.png", "accuracy_vs_spend.png")


def _evo(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return example_campaign(tmp_path_factory.mktemp("report") / "c")


@pytest.fixture(scope="module")
def json_report(campaign):
    result = _evo("report", campaign, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_report_has_the_documented_shape(json_report):
    report = json_report
    suite = report["suite"]
    for key in ("call_accuracy", "exec_accuracy", "speedup_mean", "speedup_geomean", "fast_p",
                "pass_at_k", "call_pass_at_k", "spend", "timing_meaningful"):
        assert key in suite
    assert suite["fast_p"] == pytest.approx({"0": 2 / 3, "1": 1 / 3, "1.5": 1 / 3, "2": 1 / 3})
    assert suite["timing_meaningful"] is False
    add = report["tasks"]["add"]
    assert add["pass_at_k"] == pytest.approx({"1": 2 / 3, "2": 1.0, "3": 1.0})
    assert add["call_pass_at_k"] == pytest.approx({"1": 2 / 3, "2": 1.0, "3": 1.0})
    assert (add["best_speedup"], add["roofline_fraction"]) == (2.5, 0.8)
    assert report["tasks"]["matmul"]["best_speedup"] is None
    assert [g["generation"] for g in report["by_generation"]] == [0, 1, 2]
    assert [r["k"] for r in report["by_runs"]] == [1, 2, 3]
    assert report["best_speedup_by_generation"]["add"] == [1.0, 1.5, 2.5]  # from its seed
    assert any("timing_meaningful=False" in note for note in report["notes"])


def test_figures_are_written_and_not_blank(campaign, json_report):
    assert json_report["figures"] == [str(campaign / "figures" / name) for name in FIGURES]
    for name in FIGURES:
        pixels = matplotlib.image.imread(campaign / "figures" / name)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100, name
        assert pixels[..., :3].std() > 0.05, f"{name} looks blank"


def test_tables_name_tasks_and_say_timing_is_not_meaningful(campaign):
    result = _evo("report", campaign)
    assert result.exit_code == 0, result.output
    for text in ("softmax", "2.50x", "n/a (interpreter)", "By generation", "By runs k",
                 "fast_1.5", "not meaningful", "figures/pass_at_k.png"):
        assert text in result.stdout, text
    assert "0.50x" not in result.stdout  # softmax's interpreter reading, in no table


SPEEDUP_TABLES = ("Campaign interpreted: tasks", "Best candidate per task", "Suite",
                  "By generation", "By runs k", "By difficulty")
"""Every table of a campaign report that shows a figure made from speedups."""


def _tables(text, titles):
    """Returns {title: the lines of the table printed under it}."""
    found = {}
    for title in titles:
        lines = text[text.index(title + " "):].splitlines()
        found[title] = lines[:next(i for i, line in enumerate(lines) if line.startswith("└")) + 1]
    return found


def _interpreted(folder, meaningful):
    """A task on two islands: a seed, a child that read 1.39x and a later correct one (1.10x)."""
    rows = [evaluation("add", 0, 0, call_ok=True, correct=True, speedup=1.0, operator="seed",
                       meaningful=meaningful),
            evaluation("add", 0, 1, call_ok=True, correct=True, speedup=1.39,
                       meaningful=meaningful),
            evaluation("add", 1, 2, call_ok=True, correct=True, speedup=1.1,
                       meaningful=meaningful)]
    return write_campaign(folder, rows, islands=2, name="interpreted")


def test_every_table_leaves_interpreter_speedups_out_the_same_way(tmp_path):
    """Tasks, best candidate, suite (fast_p too), by generation, by runs and by difficulty:
    on the interpreter no speedup-derived number, one wording; the JSON keeps the numbers."""
    folder = _interpreted(tmp_path / "cpu", meaningful=False)
    text = _evo("report", folder).stdout
    for title, lines in _tables(text, SPEEDUP_TABLES).items():
        shown = "\n".join(lines)
        assert "n/a (interpreter)" in shown, title
        assert not re.search(r"\d\.\d\dx", shown), shown  # 1.39x, 1.10x, 1.00x: none
    suite, = [line for line in _tables(text, ["Suite"])["Suite"] if line.startswith("│")]
    assert suite.count("n/a (interpreter)") == 6  # speedup mean, geomean, fast_0..fast_2
    report = json.loads(_evo("report", folder, "--json").stdout)
    assert report["suite"]["timing_meaningful"] is False
    assert report["suite"]["speedup_mean"] == pytest.approx(1.39)  # recorded, not shown
    assert report["by_difficulty"]["1"]["timing_meaningful"] is False

    gpu = _evo("report", _interpreted(tmp_path / "gpu", meaningful=True)).stdout
    tables = _tables(gpu, SPEEDUP_TABLES)
    assert "n/a" not in gpu
    assert "1.39x" in "\n".join(tables["Campaign interpreted: tasks"])
    assert "1.39x" in "\n".join(tables["Best candidate per task"])
    assert "100.0%" in "\n".join(tables["Suite"])  # fast_1


def test_the_campaign_page_leaves_interpreter_speedups_out_as_the_tables_do(tmp_path):
    page = html_report.render(_interpreted(tmp_path / "cpu", meaningful=False))
    cards = page[page.index('<div class="cards">'):page.index('<p class="note">')]
    suite = page[page.index("<h2>Suite</h2>"):page.index('<div class="charts">',
                                                         page.index("<h2>Suite</h2>"))]
    facts = page[page.index('<section class="task"'):]
    facts = facts[:facts.index("</p>")]
    for part in (cards, suite, facts):
        assert "n/a (interpreter)" in part and not re.search(r"\d\.\d\dx", part), part


def _cell(folder, name, rows, islands, overrides):
    write_campaign(folder / name, rows, islands=islands, name=name)
    (folder / name / "sweep_cell.json").write_text(json.dumps(
        {"cell": name, "overrides": overrides, "status": "done"}))


def test_sweep_folder_compares_cells_at_equal_compute(tmp_path):
    # narrow: 1 island; gen 0 fails, gen 1 solves at 2.0x. 2 evaluations in all.
    _cell(tmp_path, "islands-1", [evaluation("add", 0, 0, call_ok=False, operator="generator"),
                                  evaluation("add", 0, 1, call_ok=True, correct=True, speedup=2.0)],
          1, {"search.islands": 1})
    # wide: 2 islands; gen 0 solves one run at 1.5x, gen 2 the other at 3.0x. 6 evaluations.
    wide = [evaluation("add", 0, 0, call_ok=True, correct=True, speedup=1.5),
            evaluation("add", 1, 0, call_ok=False)]
    wide += [evaluation("add", i, 1, call_ok=False) for i in (0, 1)]
    wide += [evaluation("add", 0, 2, call_ok=False),
             evaluation("add", 1, 2, call_ok=True, correct=True, speedup=3.0)]
    _cell(tmp_path, "islands-2", wide, 2, {"search.islands": 2})
    (tmp_path / "not-started").mkdir()
    (tmp_path / "not-started" / "campaign.json").write_text("{}")

    result = _evo("report", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    cells = {c["cell"]: c for c in report["cells"]}
    assert cells["islands-2"]["suite"]["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert cells["islands-2"]["spend"]["evaluations"] == 6
    assert report["skipped"][0]["cell"] == "not-started"
    assert set(report["equal_compute"]) == {"evaluations", "gpu_s"}  # nobody spent tokens
    at_two, = report["equal_compute"]["evaluations"]  # 6: only one cell spent it
    assert at_two["budget"] == 2
    assert at_two["cells"]["islands-1"] == pytest.approx(
        {"generation": 1, "spent": 2, "exec_accuracy": 1.0, "found_accuracy": 1.0,
         "pass_at_1": 1.0, "speedup_geomean": 2.0, "found_speedup_geomean": 2.0})
    assert at_two["cells"]["islands-2"] == pytest.approx(
        {"generation": 0, "spent": 2, "exec_accuracy": 1.0, "found_accuracy": 1.0,
         "pass_at_1": 0.5, "speedup_geomean": 1.5, "found_speedup_geomean": 1.5})
    pixels = matplotlib.image.imread(tmp_path / "figures" / "sweep_accuracy_vs_spend.png")
    assert pixels[..., :3].std() > 0.05

    table = _evo("report", tmp_path)
    assert "At equal compute: evaluations" in table.stdout and "<= 2" in table.stdout and "islands-2" in table.stdout


def test_missing_and_empty_folders_are_one_line_errors(tmp_path):
    missing = _evo("report", tmp_path / "nope")
    assert missing.exit_code == 2 and "error: no results folder" in missing.output
    empty = _evo("report", tmp_path)
    assert empty.exit_code == 2 and "holds no campaign" in empty.output


def _failed_call(generation, minute, kind, error):
    return {**llm_call("add", 0, generation, 0, 0.0), "success": False, "failure_kind": kind,
            "error": error, "finished_at": pd.Timestamp(f"2026-01-01 00:{minute:02d}", tz="UTC")}


def test_a_campaign_without_evaluations_says_what_ended_it_and_its_llm_failures(tmp_path):
    calls = [_failed_call(0, 1, "server_error", "HTTP 500 from x"),
             _failed_call(1, 2, "no_code_block", "no_code_block: first"),
             _failed_call(1, 3, "no_code_block", "no_code_block: latest\nsecond line"),
             llm_call("add", 0, 1, 10, 0.0)]
    folder = write_campaign(tmp_path / "c", [], calls, islands=1, name="dead")

    unrecorded = _evo("report", folder, "--json")
    assert unrecorded.exit_code == 0, unrecorded.output
    report = json.loads(unrecorded.stdout)
    assert (report["campaign"], report["evaluations"], report["stop"]) == ("dead", 0, None)
    assert report["notes"] == ["campaign.json records no end of a run: it is still running, "
                               "or it was killed"]
    assert report["llm"] == {"calls": 4, "failed": 3, "kinds": {  # the commonest kind first
        "no_code_block": {"calls": 2, "example": "no_code_block: latest\nsecond line"},
        "server_error": {"calls": 1, "example": "HTTP 500 from x"}}}

    ending.record(folder, ending.FATAL, "the fitness sandbox is unavailable: no bwrap",
                  ["traceback in c/evo-run.log"])
    (folder / "evo-run.log").write_text("Traceback ...")
    text = _evo("report", folder)
    assert text.exit_code == 0, text.output
    assert "Campaign dead" in text.stdout and "has no evaluations" in text.stdout
    assert "last run: the fitness sandbox is unavailable: no bwrap (at " in text.stdout
    assert "  traceback in c/evo-run.log" in text.stdout
    assert "LLM calls: 4, 3 failed" in text.stdout
    assert "no_code_block: latest" in text.stdout and "second line" not in text.stdout
    recorded = json.loads(_evo("report", folder, "--json").stdout)
    assert recorded["stop"]["stopped_by"] == "fatal" and recorded["notes"] == []


def test_a_campaign_report_says_how_its_last_run_ended(tmp_path):
    folder = example_campaign(tmp_path / "c")
    ending.record(folder, "max_usd", "stopped by the max_usd cap after generation 2")
    report = json.loads(_evo("report", folder, "--json").stdout)
    assert report["stop"]["stopped_by"] == "max_usd"
    assert report["llm"] == {"calls": 3, "failed": 0, "kinds": {}}
    text = _evo("report", folder).stdout
    assert "last run: stopped by the max_usd cap after generation 2" in text
    assert "LLM calls: 3, none failed" in text


def _header_of(text, title):
    """Returns the heading line of the table printed under `title`."""
    lines = text[text.index(title):].splitlines()
    return next(line for line in lines if line.startswith("┃"))


@pytest.mark.parametrize("meaningful, heading, not_heading",
                         [(False, "eval-s", "GPU-s"), (True, "GPU-s", "eval-s")])
def test_fitness_seconds_are_called_gpu_seconds_only_on_a_gpu(tmp_path, meaningful, heading,
                                                               not_heading):
    rows = [evaluation("add", 0, 0, call_ok=True, correct=True, speedup=1.0, operator="seed",
                       meaningful=meaningful)]
    _cell(tmp_path, "only", rows, 1, {"search.islands": 1})
    campaign = _evo("report", tmp_path / "only")
    assert campaign.exit_code == 0, campaign.output
    by_generation = _header_of(campaign.stdout, "By generation")
    assert heading in by_generation and not_heading not in by_generation, by_generation
    backend = "cuda" if meaningful else "interpreter"
    assert json.loads(_evo("report", tmp_path / "only", "--json").stdout)["backends"] == [backend]
    sweep = _evo("report", tmp_path)
    assert sweep.exit_code == 0, sweep.output
    assert heading in _header_of(sweep.stdout, "Sweep"), sweep.stdout
    cells = json.loads(_evo("report", tmp_path, "--json").stdout)["cells"]
    assert cells[0]["backends"] == [backend]


def test_a_sweep_over_both_kinds_of_device_names_both_seconds(tmp_path):
    for name, meaningful in (("gpu", True), ("cpu", False)):
        _cell(tmp_path, name, [evaluation("add", 0, 0, call_ok=True, meaningful=meaningful)], 1,
              {"fitness.device": name})
    sweep = _evo("report", tmp_path)
    assert sweep.exit_code == 0, sweep.output
    assert "GPU/eval-s" in _header_of(sweep.stdout, "Sweep")


def test_a_sweep_leaves_out_each_interpreter_cells_speedups_fast_1_included(tmp_path):
    for name, meaningful in (("gpu", True), ("cpu", False)):
        _cell(tmp_path, name, [
            evaluation("add", 0, 0, call_ok=True, correct=True, speedup=1.0, operator="seed",
                       meaningful=meaningful),
            evaluation("add", 0, 1, call_ok=True, correct=True, speedup=2.0,
                       meaningful=meaningful)], 1, {"fitness.device": name})
    text = _evo("report", tmp_path).stdout
    rows = {line.split("│")[1].strip(): line for line in _tables(text, ["Sweep"])["Sweep"]
            if line.startswith("│")}
    assert rows["cpu"].count("n/a (interpreter)") == 2 and "2.00x" not in rows["cpu"]
    assert "2.00x" in rows["gpu"] and "100.0%" in rows["gpu"] and "n/a" not in rows["gpu"]
    grid = "\n".join(_tables(text, ["Generations x islands"])["Generations x islands"])
    assert "100.0% / n/a (interpreter) (2 cells)" in grid  # a point with an interpreter cell
    budget = _tables(text, ["At equal compute: evaluations"])["At equal compute: evaluations"]
    cpu, = [line for line in budget if line.startswith("│ cpu")]
    gpu, = [line for line in budget if line.startswith("│ gpu")]
    assert "gen 1: 100.0% / n/a (interpreter)" in cpu and "gen 1: 100.0% / 2.00x" in gpu
