"""pass@k and expected-best-of-k against values worked out by hand."""

import math

import pytest

from evo.analysis import passk


def test_pass_at_k_matches_hand_computed_binomials():
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert passk.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # n=10, c=3, k=1: c/n
    assert passk.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    # n=10, c=1, k=5: 1 - C(9,5)/C(10,5) = 1 - 126/252
    assert passk.pass_at_k(10, 1, 5) == pytest.approx(0.5)


def test_no_success_gives_zero_and_all_successes_give_one():
    assert passk.pass_at_k(7, 0, 1) == 0.0
    assert passk.pass_at_k(7, 0, 7) == 0.0
    assert passk.pass_at_k(7, 7, 1) == 1.0


def test_k_beyond_failures_is_exactly_one():
    # n=4, c=2: any 3 runs include a success
    assert passk.pass_at_k(4, 2, 3) == 1.0
    assert passk.pass_at_k(4, 2, 4) == 1.0


def test_large_n_stays_finite_and_matches_exact_ratio():
    exact = 1 - math.comb(1000 - 7, 50) / math.comb(1000, 50)
    assert passk.pass_at_k(1000, 7, 50) == pytest.approx(exact, rel=1e-12)


def test_curve_is_monotone_in_k():
    curve = passk.pass_at_k_curve(10, 2)
    assert list(curve) == list(range(1, 11))
    assert all(a <= b for a, b in zip(curve.values(), list(curve.values())[1:]))


@pytest.mark.parametrize("n, c, k", [(3, 1, 4), (3, 1, 0), (0, 0, 1), (3, 4, 1), (3, -1, 1)])
def test_undefined_arguments_are_rejected_with_the_values(n, c, k):
    with pytest.raises(ValueError, match=rf"n={n}"):
        passk.pass_at_k(n, c, k)


def test_expected_best_of_k_by_enumeration():
    values = [0.0, 1.5, 2.5]
    assert passk.expected_best_of_k(values, 1) == pytest.approx(4 / 3)
    # pairs: (0,1.5)->1.5, (0,2.5)->2.5, (1.5,2.5)->2.5
    assert passk.expected_best_of_k(values, 2) == pytest.approx((1.5 + 2.5 + 2.5) / 3)
    assert passk.expected_best_of_k(values, 3) == 2.5
    with pytest.raises(ValueError, match="k=4 is undefined with n=3"):
        passk.expected_best_of_k(values, 4)
