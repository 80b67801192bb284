"""A sweep compares like with like: at equal compute the seeds are left out of speedup as of
accuracy, budgets within a few percent are one column, and the figures say what a rising
curve is made of (offline children of a correct seed; the best of more noisy readings).
Real Parquet folders as the engine writes them, read by `evo report`."""

import json
import re

import pytest
from typer.testing import CliRunner

from evo import cli
from evo.analysis import compare, noise, sweep_plots
from synthetic_results import evaluation, write_campaign


def _evo(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def _cell(sweep, name, rows, islands, mode="llm"):
    folder = write_campaign(sweep / name, rows, islands=islands, name=name)
    meta = json.loads((folder / "campaign.json").read_text())
    meta["config"]["operators"] = {"mode": mode}
    (folder / "campaign.json").write_text(json.dumps(meta))
    (folder / "sweep_cell.json").write_text(json.dumps(
        {"cell": name, "overrides": {"search.islands": islands}, "status": "done"}))


def _seed(island, speedup, reused=False):
    return evaluation("add", island, 0, call_ok=True, correct=True, speedup=speedup,
                      operator="seed", reused=reused)


def test_equal_compute_leaves_the_seeds_out_of_speedup_as_of_accuracy(tmp_path):
    # narrow: its seed reads 1.89x, its gen-1 child 1.2x; 2 evaluations.
    _cell(tmp_path, "narrow", [_seed(0, 1.89), evaluation("add", 0, 1, call_ok=True,
                                                           correct=True, speedup=1.2)], 1)
    # wide: the same seed on both islands (one scoring), two failed children; 3 evaluations.
    _cell(tmp_path, "wide", [_seed(0, 1.89), _seed(1, 1.89, reused=True),
                             evaluation("add", 0, 1, call_ok=False),
                             evaluation("add", 1, 1, call_ok=False)], 2)
    report = json.loads(_evo("report", tmp_path, "--json").stdout)
    at_two, = report["equal_compute"]["evaluations"]
    wide = at_two["cells"]["wide"]  # read at generation 0: its seeds alone
    assert (wide["generation"], wide["found_accuracy"], wide["found_speedup_geomean"]) == (
        0, 0.0, None)
    assert at_two["cells"]["narrow"]["found_speedup_geomean"] == pytest.approx(1.2)
    text = _evo("report", tmp_path).stdout
    table = text[text.index("At equal compute: evaluations"):text.index("At equal compute: GPU")]
    assert re.search(r"│ wide +│ +gen 0: 0\.0% / - │", table) and "1.89x" not in table
    assert "gen 1: 100.0% / 1.20x" in table
    grid = text[text.index("Generations x islands"):text.index("At equal compute")]
    assert "1.89x" not in grid and "1.20x" in grid  # the grid pairs them alike


def _spending(count, speedup):
    """A seed, then `count - 1` children over two generations, the last correct."""
    rows = [_seed(0, 1.0)]
    rows += [evaluation("add", 0, 1 + i % 2, call_ok=False) for i in range(count - 2)]
    return rows + [evaluation("add", 0, 2, call_ok=True, correct=True, speedup=speedup)]


def test_budgets_within_a_few_percent_are_one_column_read_at_each_cells_end(tmp_path):
    assert compare.budgets([17, 18, 40, 40]) == [(17, 18), (40, 40)]
    _cell(tmp_path, "a", _spending(17, 1.5), 1)
    _cell(tmp_path, "b", _spending(18, 2.5), 1)
    report = json.loads(_evo("report", tmp_path, "--json").stdout)
    budget, = report["equal_compute"]["evaluations"]
    assert (budget["low"], budget["budget"]) == (17, 18)
    assert {c: (at["generation"], at["spent"]) for c, at in budget["cells"].items()} == {
        "a": (2, 17), "b": (2, 18)}  # both at their ends, side by side
    text = _evo("report", tmp_path).stdout
    assert "<= 18 (17-18)" in text and "<= 17 " not in text


def test_sweep_figures_say_what_their_rising_curves_are_made_of(tmp_path):
    for name, speedup in (("one", 1.3), ("two", 1.6)):
        _cell(tmp_path, name, [_seed(0, 1.0), {**_seed(0, 2.2), "reused": False},
                               evaluation("add", 0, 1, call_ok=True, correct=True,
                                          speedup=speedup)], 1, mode="offline")
    cells, _, curves, rows = compare.read_cells(tmp_path)
    found = compare.compared(cells, curves, rows)
    drawn = sweep_plots.figures(cells, curves, found, ["cuda"])
    rising = noise.rising_best_note(found["noise_band"])
    assert "the seed against itself read 1.00x-2.20x" in rising
    generation = " ".join(drawn["sweep_vs_generation"].get_suptitle().split())
    assert "children keep a correct seed's code" in generation and "almost always correct" in (
        generation)
    for name in ("sweep_vs_generation", "sweep_speedup_vs_spend", "sweep_vs_parallel"):
        assert "more compute, more readings" in " ".join(drawn[name].get_suptitle().split()), name
    assert "more compute, more readings" in _evo("report", tmp_path).stdout.replace("\n", " ")
