"""What an LLM call costs: USD per million tokens, per model.

One table for the client (which books each call's `cost_usd`) and the config check (which
refuses a `budget.max_usd` that could not stop a run, `evo.config`): a model missing from
the table in use costs $0, so the cap would never be reached.
"""

from __future__ import annotations

from typing import Mapping

DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    # model: (USD per 1M prompt tokens, USD per 1M completion tokens); list prices when written.
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}
"""Used when the config gives no price table; a model missing from the table costs 0."""


def table(configured: Mapping[str, tuple[float, float]] | None) -> dict[str, tuple[float, float]]:
    """Returns the prices in use: `configured` (`operators.price_usd_per_mtok`) when it names
    any model, else DEFAULT_PRICES."""
    return dict(configured or DEFAULT_PRICES)
