"""Figures a reader can trust: plain log ticks, legends that match what is drawn, lines that
coincide told apart, every series from generation 0, words that match the design (islands
that migrate are not independent runs). The report's own figures are inspected as matplotlib
Figures, drawn from results folders written with the engine's Parquet schemas; the HTML
page's SVG charts are held to the same rules."""

import math
import re

import matplotlib.pyplot as plt
import pytest

from evo.analysis import metrics, plots, report, svg_charts
from synthetic_results import evaluation, write_campaign

PLAIN_NUMBER = re.compile(r"^\d+(\.\d+)?x?$")


def _figures(folder, rows, **campaign):
    results = metrics.load(write_campaign(folder, rows, **campaign))
    return report.campaign_figures(results, report.tables_of(results))


@pytest.fixture
def close_figures():
    yield
    plt.close("all")


def _seeded_campaign(tasks=("add", "mul"), islands=2, speedups=(1.0, 1.6, 2.4)):
    """Each task's islands start from a correct seed (generation 0) and improve on it in
    generations 1 and 2, every task alike: their curves coincide."""
    rows = []
    for task in tasks:
        for island in range(islands):
            for generation, speedup in enumerate(speedups):
                rows.append(evaluation(task, island, generation, call_ok=True, correct=True,
                                       speedup=speedup,
                                       operator="seed" if generation == 0 else "optimizer"))
    return rows


def _visible_tick_labels(figure, axis):
    figure.canvas.draw()
    axes = figure.axes[0]
    low, high = sorted(axes.get_xlim() if axis == "x" else axes.get_ylim())
    ticks = axes.get_xticks() if axis == "x" else axes.get_yticks()
    labels = axes.get_xticklabels() if axis == "x" else axes.get_yticklabels()
    return [label.get_text() for tick, label in zip(ticks, labels)
            if low <= tick <= high and label.get_text()]


def _legend_texts(axes):
    return [text.get_text() for text in axes.get_legend().get_texts()]


def _labelled_lines(axes):
    return [line for line in axes.get_lines() if not line.get_label().startswith("_")]


def _labelled_bands(axes):
    """Returns the labels of shaded bands (the seeds' noise band), listed after the lines."""
    return [patch.get_label() for patch in axes.patches if not patch.get_label().startswith("_")]


def test_log_axes_read_plain_numbers(tmp_path, close_figures):
    rows = [evaluation("add", 0, generation, call_ok=True, correct=True, speedup=speedup)
            for generation, speedup in enumerate([0.4, 0.7, 1.3, 3.0])]
    histogram = _figures(tmp_path / "c", rows, islands=1)["speedup_distribution"]
    assert histogram.axes[0].get_xscale() == "log"
    labels = _visible_tick_labels(histogram, "x")
    assert labels == ["0.5", "1", "2", "3"]  # not 5×10⁻¹, 10⁰, 2×10⁰, 3×10⁰
    assert all(PLAIN_NUMBER.match(label) for label in _visible_tick_labels(histogram, "y"))

    cases = [{"task": "add", "case": "n=1", "speedup": {"baseline": 3.0, "eager": 0.4}}]
    versus = plots.versus_torch(cases, ("eager",))
    labels = _visible_tick_labels(versus, "x")
    assert len(labels) >= 3 and all(PLAIN_NUMBER.match(label) for label in labels), labels
    assert "1x" in labels


def test_every_legend_entry_is_a_drawn_line_and_every_drawn_line_is_in_the_legend(
        tmp_path, close_figures):
    figures = _figures(tmp_path / "c", _seeded_campaign(), islands=2)
    for name, figure in figures.items():
        for axes in figure.axes:
            lines = _labelled_lines(axes)
            assert all(len(line.get_xdata()) and line.get_visible() for line in lines), name
            if axes.get_legend() is None:  # a lone line (or none) needs no legend
                assert len(lines) <= 1, name
            else:
                assert _legend_texts(axes) == [line.get_label() for line in lines] + \
                    _labelled_bands(axes), name


def test_pass_at_k_draws_the_single_tasks_its_legend_names(tmp_path, close_figures):
    rows = _seeded_campaign(tasks=("add",), islands=3) + [
        evaluation("mul", island, 1, call_ok=True, correct=island == 0, speedup=1.2)
        for island in range(3)]
    axes = _figures(tmp_path / "c", rows, islands=3)["pass_at_k"].axes[0]
    grey = [line for line in axes.get_lines() if line.get_color() == "0.55"]
    assert len(grey) == 2  # one line per task, each with its points marked
    assert all(line.get_marker() not in ("None", "", None) for line in grey)
    assert sorted(tuple(line.get_ydata()) for line in grey) == [
        pytest.approx((1 / 3, 2 / 3, 1.0)), pytest.approx((1.0, 1.0, 1.0))]
    assert _legend_texts(axes)[0] == "single tasks' pass@k (2)"
    assert "grey" not in axes.get_title()

    alone = _figures(tmp_path / "one", _seeded_campaign(tasks=("add",)), islands=2)
    axes = alone["pass_at_k"].axes[0]
    assert not any("single task" in text for text in _legend_texts(axes))  # the mean is it


@pytest.mark.parametrize("migration_interval, words", [
    (2, "they exchange migrants: not independent runs"),
    (0, "no migration: independent runs")])
def test_pass_at_k_axis_says_whether_islands_are_independent_runs(
        tmp_path, close_figures, migration_interval, words):
    figures = _figures(tmp_path / "c", _seeded_campaign(), islands=2,
                       migration_interval=migration_interval)
    label = figures["pass_at_k"].axes[0].get_xlabel()
    assert label.startswith("k (islands per task") and words in label


def test_lines_that_coincide_are_told_apart(tmp_path, close_figures):
    figures = _figures(tmp_path / "c", _seeded_campaign(), islands=2)
    best = figures["best_speedup_by_generation"].axes[0]
    add, mul = _labelled_lines(best)
    assert list(add.get_ydata()) == list(mul.get_ydata())  # the same curve, twice
    assert add.get_marker() != mul.get_marker() and add.get_linestyle() != mul.get_linestyle()
    assert add.get_fillstyle() == mul.get_fillstyle() == "none"  # hollow: both shapes show
    assert _legend_texts(best) == ["add", "mul (same as add)",
                                   "seed's own spread 1.00x-1.00x (noise)"]

    accuracy = figures["accuracy_vs_generation"].axes[0]
    assert _legend_texts(accuracy)[1] == "execution accuracy (same as call accuracy)"
    assert len({line.get_marker() for line in _labelled_lines(accuracy)}) == 3


def test_every_series_starts_at_generation_zero(tmp_path, close_figures):
    figures = _figures(tmp_path / "c", _seeded_campaign(), islands=2)
    for name in ("best_speedup_by_generation", "accuracy_vs_generation"):
        for line in _labelled_lines(figures[name].axes[0]):
            assert line.get_xdata()[0] == 0, (name, line.get_label())
            assert math.isfinite(line.get_ydata()[0]), (name, line.get_label())
    add = _labelled_lines(figures["best_speedup_by_generation"].axes[0])[0]
    assert list(add.get_ydata()) == [1.0, 1.6, 2.4]  # from the seed's 1.0, at generation 0


def test_svg_lines_that_coincide_are_told_apart():
    same = [svg_charts.Series(name, [0, 1, 2], [1.0, 1.0, 2.0]) for name in ("add", "mul")]
    chart = svg_charts.line_chart(same, title="t", x_label="generation", y_label="speedup")
    paths = re.findall(r'<path [^>]*class="series"[^>]*/>', chart)
    assert ['data-label="add"' in paths[0], 'data-label="mul"' in paths[1]] == [True, True]
    assert "stroke-dasharray" not in paths[0] and 'stroke-dasharray="6 3"' in paths[1]
    assert chart.count("<circle") == 1 + 3 and chart.count("<polygon") == 1 + 3  # legend + points
    assert ">add</text>" in chart and ">mul (same as add)</text>" in chart
