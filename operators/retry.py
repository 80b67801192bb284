"""When to retry an LLM request and how long to wait: exponential backoff with jitter, Retry-After.

Kept apart from the client so the policy reads in one screen: 429, 5xx, timeouts and
connection errors are worth another try; other 4xx (bad request, bad key) are not.
"""

from __future__ import annotations

import email.utils
import random
import time
from typing import Mapping

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses below 500 that mean "try again later" (timeout, conflict, rate limit)."""


def is_retryable_status(status: int) -> bool:
    """Returns True for 408/409/429 and every 5xx."""
    return status in RETRYABLE_STATUS or status >= 500


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Returns the wait a server asked for (retry-after-ms, Retry-After seconds or HTTP date), or None."""
    if not headers:
        return None
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            pass
    parsed = email.utils.parsedate_tz(headers.get("retry-after") or "")
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def backoff_s(attempt: int, base_s: float, max_s: float, rng: random.Random,
              server_wait_s: float | None = None) -> float:
    """Returns the wait before retry number `attempt + 1` (attempt counts from 0).

    Exponential (`base_s * 2**attempt`, capped at `max_s`) with "equal jitter": a uniform
    draw from the upper half, so many clients hit by the same 429 do not return in step.
    A server's Retry-After is honoured as a floor (capped at `max_s` so one bad header
    cannot stall a campaign for hours).
    """
    ceiling = min(max_s, base_s * (2 ** attempt))
    wait = ceiling / 2 + rng.uniform(0.0, ceiling / 2)
    if server_wait_s is not None:
        wait = max(wait, min(server_wait_s, max_s))
    return wait
