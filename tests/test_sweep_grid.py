"""sweep_grid.png's colour bar reads on the metric's own scale: an accuracy spans 0-100%, so a
grid where every cell reads 100% is one full colour on a 0-100% bar (it was a 0.90-1.10 bar
around the one value); a speedup's scale holds 1.0x and every cell's value."""

import pytest

from evo.analysis import sweep_plots


SHOWN = ("found_accuracy", "found_speedup_geomean")


def _found(accuracy: float, speedups: list[float]) -> dict:
    points = [{"generations": g, "islands": i, "found_accuracy": accuracy,
               "found_speedup_geomean": speedups[k]}
              for k, (g, i) in enumerate([(1, 1), (1, 2), (2, 1), (2, 2)])]
    return {"generations": [1, 2], "islands": [1, 2], "points": points}


def _bar(figure):
    """Returns the grid's colour limits and the colour bar's tick labels."""
    grid_axes, bar_axes = figure.axes
    figure.canvas.draw()
    return (grid_axes.images[0].get_clim(),
            [label.get_text() for label in bar_axes.get_yticklabels()])


def test_a_grid_of_equal_accuracies_is_shaded_on_a_0_to_100_percent_bar():
    limits, labels = _bar(sweep_plots.grid(_found(1.0, [1.9, 2.1, 2.0, 2.2]), SHOWN,
                                           meaningful=False))
    assert limits == (0.0, 1.0)
    assert labels[0] == "0%" and labels[-1] == "100%"


@pytest.mark.parametrize("speedups, limits", [([1.5, 2.5, 2.0, 3.0], (1.0, 3.0)),
                                              ([0.5, 0.8, 0.6, 0.7], (0.5, 1.0)),
                                              ([1.0, 1.0, 1.0, 1.0], (1.0, 2.0))])
def test_a_meaningful_speedup_grid_is_shaded_from_its_values_and_1x(speedups, limits):
    shown, _ = _bar(sweep_plots.grid(_found(1.0, speedups), SHOWN, meaningful=True))
    assert shown == pytest.approx(limits)
