"""A spending cap shared by every LLM call of a campaign: reserve before a call, settle after.

The client reserves a call's worst-case cost (estimated prompt + `max_tokens` completion)
before sending it and settles the actual cost when it returns, so a cap also counts calls
still in flight: with eight calls out, the ninth is refused if the eight could exhaust it.
Any object with these two methods can stand in (the engine may share one across islands).
"""

from __future__ import annotations

import threading


class Budget:
    """Caps on USD and tokens (None: no cap), safe to share between threads and coroutines.

    Attributes:
      max_usd: refuse a call that could take spending past this many US dollars.
      max_tokens: refuse a call that could take prompt + completion tokens past this.
    """

    def __init__(self, max_usd: float | None = None, max_tokens: int | None = None):
        for name, value in (("max_usd", max_usd), ("max_tokens", max_tokens)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        self.max_usd = max_usd
        self.max_tokens = max_tokens
        self.spent_usd = 0.0
        self.spent_tokens = 0
        self.reserved_usd = 0.0
        self.reserved_tokens = 0
        self.refused = 0
        self.stopped_by: str | None = None  # "max_usd" | "max_tokens": the cap that first refused
        self._lock = threading.Lock()

    def reserve(self, estimated_usd: float, estimated_tokens: int) -> bool:
        """Returns True and holds the estimate if it fits under every cap, else False."""
        with self._lock:
            over_usd = (self.max_usd is not None
                        and self.spent_usd + self.reserved_usd + estimated_usd > self.max_usd)
            over_tokens = (self.max_tokens is not None
                           and self.spent_tokens + self.reserved_tokens + estimated_tokens > self.max_tokens)
            if over_usd or over_tokens:
                self.refused += 1
                self.stopped_by = self.stopped_by or ("max_usd" if over_usd else "max_tokens")
                return False
            self.reserved_usd += estimated_usd
            self.reserved_tokens += estimated_tokens
            return True

    def settle(self, reserved_usd: float, reserved_tokens: int, actual_usd: float, actual_tokens: int) -> None:
        """Releases a reservation and books what the call actually cost."""
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
            self.reserved_tokens = max(0, self.reserved_tokens - reserved_tokens)
            self.spent_usd += actual_usd
            self.spent_tokens += actual_tokens

    def snapshot(self) -> dict:
        """Returns what was spent and which cap refused a call, for a checkpoint (reservations
        are not kept: after a restart nothing is in flight)."""
        with self._lock:
            return {"spent_usd": self.spent_usd, "spent_tokens": self.spent_tokens,
                    "stopped_by": self.stopped_by}

    def restore(self, snapshot: dict) -> None:
        """Takes back what `snapshot` kept (a resumed campaign)."""
        with self._lock:
            self.spent_usd = snapshot["spent_usd"]
            self.spent_tokens = snapshot["spent_tokens"]
            self.stopped_by = snapshot["stopped_by"]

    def __repr__(self) -> str:
        return (f"Budget(max_usd={self.max_usd}, max_tokens={self.max_tokens}, spent_usd={self.spent_usd:.4f}, "
                f"spent_tokens={self.spent_tokens}, reserved_usd={self.reserved_usd:.4f})")
