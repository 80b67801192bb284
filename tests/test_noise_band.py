"""Noise said, not hidden: the seed (the baseline scored against itself) gives each task its
noise band; a GPU best inside it says it may be noise; under the interpreter the campaign
page names its best by correctness and draws the band."""

import pytest

from evo.analysis import best, compare, html_report, metrics, noise
from synthetic_results import evaluation, write_campaign


def _seed(task, per_case, meaningful=True, island=0):
    """A seed row whose cases read `per_case` (baseline / seed latency)."""
    row = evaluation(task, island, 0, call_ok=True, correct=True, speedup=1.0, operator="seed",
                     meaningful=meaningful)
    row["case_names"] = [f"n{i}" for i in range(len(per_case))]
    row["latency_us"] = [10.0] * len(per_case)
    row["ref_latency_us"] = [10.0 * r for r in per_case]
    return row


def _results(tmp_path, rows):
    return metrics.load(write_campaign(tmp_path / "c", rows, islands=1))


def test_the_seed_band_spans_every_ratio_the_seed_read(tmp_path):
    rows = [_seed("add", [0.97, 1.04]), _seed("add", [0.99, 1.01], island=1)]
    rows[1]["reused"] = True  # a repeat of one verdict is not a second reading
    band = noise.seed_bands(_results(tmp_path, rows).evaluations)["add"]
    assert (band.low, band.high, band.readings) == (pytest.approx(0.97), pytest.approx(1.04), 3)


def test_a_gpu_best_inside_the_seeds_spread_says_it_may_be_noise(tmp_path):
    inside = [_seed("add", [0.97, 1.04]),
              evaluation("add", 0, 1, call_ok=True, correct=True, speedup=1.02)]
    chosen = best.of_results(_results(tmp_path / "a", inside))["add"]
    assert chosen["ranked_by"] == "speedup" and chosen["speedup"] == pytest.approx(1.02)
    assert chosen["ranking"] == ("by speedup (fastest correct); inside the seed's own spread "
                                 "0.97x-1.04x: may be noise")
    assert chosen["noise_band"] == pytest.approx([0.97, 1.04])
    outside = inside[:1] + [evaluation("add", 0, 1, call_ok=True, correct=True, speedup=1.5)]
    assert best.of_results(_results(tmp_path / "b", outside))["add"]["ranking"] == \
        "by speedup (fastest correct)"


def _interpreter_campaign(folder):
    """A seed that reads 0.4x-2.9x against itself, a gen-1 child that reads 3.0x and a
    gen-2 child that reads 1.1x: interpreter noise, so the best is the gen-2 one."""
    rows = [_seed("add", [0.4, 2.9], meaningful=False),
            {**evaluation("add", 0, 1, call_ok=True, correct=True, speedup=3.0,
                          meaningful=False), "candidate_id": "lucky-timing", "parent_ids": []},
            {**evaluation("add", 0, 2, call_ok=True, correct=True, speedup=1.1,
                          meaningful=False), "candidate_id": "latest-correct", "parent_ids": []}]
    return write_campaign(folder, rows, islands=1)


def test_the_campaign_page_names_its_best_by_correctness_under_the_interpreter(tmp_path):
    page = html_report.render(_interpreter_campaign(tmp_path / "c"))
    suite = page[page.index("<h2>Suite</h2>"):page.index('<div class="charts">',
                                                         page.index("<h2>Suite</h2>"))]
    assert "latest-correct" in suite and "lucky-timing" not in suite
    assert "by correctness; timing not meaningful here" in suite
    assert "Lineage of the best kernel (by correctness; timing not meaningful here)" in page
    assert "Final source (latest-correct)" in page
    assert "<b>n/a (interpreter)</b><span>speedup geomean (solved)</span>" in page
    assert "3.00x" not in page[:page.index('<div class="charts">')]  # the lucky timing
    assert "noise band of add: the seed (the baseline against itself) read 0.40x-2.90x" in page
    assert 'class="band"' in page  # the band drawn under the best speedup so far


def test_equal_compute_budgets_are_several_totals_two_cells_reached():
    assert compare.budgets([3, 5, 5, 9]) == [(3, 3), (5, 5)]  # 9: one cell alone
    assert compare.budgets([1, 2, 3, 4, 5, 6, 7, 8, 9]) == [(1, 1), (3, 3), (6, 6), (8, 8)]
