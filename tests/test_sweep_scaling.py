"""A real sweep answers "does more sequential or parallel compute help?": `evo sweep` of a
generations x islands grid of offline campaigns under the Triton interpreter, then `evo
report` (text, JSON, PNGs, HTML) and `evo.analysis.load_sweep`. Under the interpreter no
candidate is best by speed, and every surface says timing is not meaningful."""

import json

import pandas as pd
import pytest

from evo import sweep
from evo.analysis import compare, html_report, load_sweep, metrics, report, sweep_plots
from evo.analysis.plots import plt
from offline_sweeps import sweep_toml

pytestmark = pytest.mark.slow  # four real campaigns (about a minute on 2 cores)

SWEEP = sweep_toml("scaling", '"search.generations" = [1, 2]\n"search.islands" = [1, 2]')
WIDEST = "generations-2__islands-2"


@pytest.fixture(scope="module")
def swept(tmp_path_factory, shared_ray):
    folder = tmp_path_factory.mktemp("scaling")
    (folder / "scaling.toml").write_text(SWEEP)
    assert sweep.main(folder / "scaling.toml", out=folder / "out") == 0
    return folder / "out"


@pytest.fixture(scope="module")
def json_report(swept):
    """What `evo report SWEEP --json` prints, as a dict (its figures drawn)."""
    return json.loads(json.dumps(metrics.to_json_value(
        compare.sweep_report(swept, swept / "figures")), allow_nan=False))


def test_the_grid_and_the_scaling_figures_are_drawn(swept, json_report):
    grid = json_report["grid"]
    assert grid["generations"] == [1, 2] and grid["islands"] == [1, 2]
    assert len(grid["points"]) == 4 and all(p["speedup_geomean"] for p in grid["points"])
    names = sorted(path.rsplit("/", 1)[1] for path in json_report["figures"])
    assert names == ["sweep_accuracy_vs_spend.png", "sweep_grid.png",
                     "sweep_speedup_vs_spend.png", "sweep_vs_generation.png",
                     "sweep_vs_parallel.png"]
    assert all((swept / "figures" / name).stat().st_size > 10_000 for name in names)


def test_accuracy_leaves_the_correct_seeds_out(json_report):
    cells = {c["cell"]: c for c in json_report["cells"]}
    assert all(c["suite"]["exec_accuracy"] == 1.0 for c in cells.values())  # the seeds
    first = json_report["equal_compute"]["evaluations"][0]["cells"]
    assert first[WIDEST]["generation"] == 0 and first[WIDEST]["found_accuracy"] == 0.0
    assert first[WIDEST]["found_speedup_geomean"] is None  # its seeds' speedup left out too
    assert cells[WIDEST]["suite"]["found_accuracy"] == 1.0  # offspring the search made


def test_the_figures_say_what_their_rising_curves_are_made_of(swept):
    cells, _, curves, rows = compare.read_cells(swept)
    drawn = sweep_plots.figures(cells, curves, compare.compared(cells, curves, rows),
                                ["interpreter"])
    said = {name: " ".join(figure.get_suptitle().split()) for name, figure in drawn.items()}
    for figure in drawn.values():
        plt.close(figure)
    assert sweep_plots.OFFLINE_SEEDED in said["sweep_vs_generation"]
    for name in ("sweep_vs_generation", "sweep_speedup_vs_spend", "sweep_vs_parallel"):
        assert "more compute, more readings" in said[name], name
        assert "as the seed against itself read" in said[name], name


def test_equal_compute_reads_cells_at_several_budgets(json_report):
    budgets = json_report["equal_compute"]["evaluations"]
    assert len(budgets) >= 2 and budgets == sorted(budgets, key=lambda b: b["budget"])
    largest = budgets[-1]
    assert largest["cells"][WIDEST]["generation"] >= 1  # no longer caught at generation 0
    assert largest["short"]  # the cheapest cell never spent that much: left out, said


def test_under_the_interpreter_the_best_is_by_correctness_with_the_seeds_band(json_report):
    assert json_report["timing_meaningful"] is False
    chosen = json_report["best_candidates"]["vector_add"]
    assert chosen["ranked_by"] == "correctness" and chosen["cell"].startswith("generations-2")
    low, high = json_report["noise_band"]
    assert low <= high
    assert any(n.startswith("interpreter timing: speedups not meaningful")
               for n in json_report["noise_notes"])
    assert any("noise band of vector_add: the seed" in n for n in json_report["noise_notes"])


def test_the_text_report_says_it_all(swept, capsys):
    report.main(swept)
    text = capsys.readouterr().out
    for line in ("Generations x islands", "Best candidate per task (over every cell)",
                 "by correctness; timing not meaningful here",
                 "n/a (interpreter)", "noise band of vector_add",
                 "At equal compute: evaluations", f"evo.analysis.load_sweep('{swept}')"):
        assert line in text, line


def test_a_sweep_loads_into_pandas_in_one_call(swept):
    with pytest.raises(Exception):
        pd.read_parquet(swept)  # figures, campaign.json and checkpoints are in the way
    rows = load_sweep(swept)
    assert {"cell", "status", "search.generations", "search.islands"} <= set(rows.columns)
    assert set(rows["cell"]) == {f"generations-{g}__islands-{i}" for g in (1, 2) for i in (1, 2)}
    widest = rows[rows["cell"] == WIDEST]
    assert len(widest) == len(pd.read_parquet(swept / WIDEST / "evaluations"))
    assert set(widest["search.islands"]) == {2} and set(widest["island"]) == {0, 1}


def test_the_sweep_page_carries_the_caveat_and_the_best(swept):
    page = html_report.write(swept).read_text()
    for text in ("Best candidate per task (over every cell)", "Generations x islands",
                 "Best speedup vs generation (interpreter timing)", "Accuracy vs islands",
                 "interpreter timing: speedups not meaningful", 'class="band"',
                 "by correctness; timing not meaningful here", "evo.analysis.load_sweep(",
                 sweep_plots.OFFLINE_SEEDED.replace("'", "&#x27;"), "more compute, more readings"):
        assert text in page, text
