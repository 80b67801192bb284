"""The campaign's caps: the LLM ledger every island shares, and which cap stopped a run.

There is one LLM budget, `operators.budget.Budget`: run here as one Ray actor that every
island's client reserves a call's worst-case cost in before sending it (so calls in flight
count) and settles the real cost in after. GPU seconds and wall time are capped between
generations by the driver (`cap_reached`).
"""

from __future__ import annotations

import dataclasses

import ray

from evo.config import Budget as BudgetConfig
from operators.budget import Budget

LEDGER_TIMEOUT_S = 60.0
"""Longest wait for the ledger actor's answer to a reservation."""


LedgerActor = ray.remote(num_cpus=0)(Budget)


class LedgerProxy:
    """The budget object an island's LLM client holds: forwards to the shared Ledger actor."""

    def __init__(self, ledger: "ray.actor.ActorHandle"):
        self._ledger = ledger

    def reserve(self, estimated_usd: float, estimated_tokens: int) -> bool:
        reference = self._ledger.reserve.remote(estimated_usd, estimated_tokens)
        return ray.get(reference, timeout=LEDGER_TIMEOUT_S)

    def settle(self, reserved_usd: float, reserved_tokens: int, actual_usd: float,
               actual_tokens: int) -> None:
        # Waited for, so a checkpoint taken after the island's breed returns includes it.
        reference = self._ledger.settle.remote(reserved_usd, reserved_tokens, actual_usd,
                                               actual_tokens)
        ray.get(reference, timeout=LEDGER_TIMEOUT_S)

    def __repr__(self) -> str:
        return "the campaign's shared budget ledger"


@dataclasses.dataclass(frozen=True)
class Spend:
    """What the campaign has used so far, across resumed runs."""

    usd: float = 0.0
    tokens: int = 0
    gpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    refused_by: str | None = None


def cap_reached(caps: BudgetConfig, spend: Spend) -> str | None:
    """Returns the name of the first cap reached ("max_usd", ...), or None to go on.

    A refused LLM reservation counts as reaching its cap: the next call would not fit.
    """
    if spend.refused_by is not None:
        return spend.refused_by
    for name, used in (("max_usd", spend.usd), ("max_tokens", spend.tokens),
                       ("max_gpu_seconds", spend.gpu_seconds),
                       ("max_wall_seconds", spend.wall_seconds)):
        cap = getattr(caps, name)
        if cap is not None and used >= cap:
            return name
    return None
