"""Unbiased estimators over independent runs: pass@k and the expected best of k runs.

A campaign's islands with `migration_interval = 0` are independent runs (GEAK's parallel
scaling). Given n runs of which c succeeded, pass@k is the probability that at least one of
k runs drawn without replacement succeeds: 1 - C(n-c, k) / C(n, k) (Chen et al., 2021).
Binomials overflow floats for large n, so the ratio is computed as a product.
"""

from __future__ import annotations

import math
from typing import Sequence


def _check_k(n: int, k: int) -> None:
    if n < 1:
        raise ValueError(f"pass@k needs at least one run, got n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} is undefined with n={n} runs (k must be in 1..{n})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Returns the unbiased pass@k of n runs with c successes.

    C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i): each factor is in [0, 1), so the
    product neither overflows nor loses the small tail. k > n - c leaves no all-failing
    draw of size k: pass@k is exactly 1. k > n is undefined and raises ValueError.
    """
    _check_k(n, k)
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_k_curve(n: int, c: int) -> dict[int, float]:
    """Returns {k: pass@k} for every defined k, 1..n."""
    return {k: pass_at_k(n, c, k) for k in range(1, n + 1)}


def expected_best_of_k(values: Sequence[float], k: int) -> float:
    """Returns the expected maximum of k values drawn without replacement from `values`.

    With the values sorted ascending, the i-th smallest (1-based) is the maximum of a
    k-subset in C(i-1, k-1) of the C(n, k) subsets. Used for "best speedup with k runs",
    where a run with no correct kernel contributes 0.
    """
    ordered = sorted(values)
    _check_k(len(ordered), k)
    total = math.comb(len(ordered), k)
    return sum(v * math.comb(i, k - 1) for i, v in enumerate(ordered)) / total
