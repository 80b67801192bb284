"""Why an LLM call gave nothing usable, and whether and when to try it again.

The client turns whatever a request raised into a `Failure` here: one word to count it by
(`kind`) and one line to act on, so the preflight, the call log, the progress lines, the
summary and the engine's circuit breaker all name a failure the same way. The client retries
429, 5xx, timeouts and connection errors; other 4xx (bad request, bad key) are not worth it.
The breaker treats the kinds' three groups differently:
  TRANSIENT: a busy or restarting endpoint recovers, so they never stop a campaign alone.
  ENDPOINT: the endpoint, as configured, cannot answer.
  any other (bad_request, empty_response, the parser's no_code_block...): this request or
      this answer was unusable; only a run of them says that something is wrong.

Nothing here imports `openai`: the client hands over the HTTP status and the server's
message, or a connection error's exception, whose standard-library types say what happened.
"""

from __future__ import annotations

import dataclasses
import email.utils
import random
import socket
import ssl
import time
from typing import Mapping

TRANSIENT = frozenset({"rate_limited", "server_error", "timeout"})
ENDPOINT = frozenset({"connection_refused", "dns_error", "tls_error", "connection_error",
                      "unauthorized", "forbidden", "not_found", "malformed_response"})
RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses below 500 that mean "try again later" (timeout, conflict, rate limit)."""


@dataclasses.dataclass(frozen=True)
class Failure:
    """A failed call: `kind` (one word, see the module docstring) and `line` (what happened,
    naming the endpoint, with what to check)."""

    kind: str
    line: str


def from_status(status: int, message: str, base_url: str, model: str,
                api_key_env: str) -> Failure:
    """Returns the failure of an HTTP error answer (`message`: the server's own words)."""
    said = f"HTTP {status} from {base_url}: {message}"
    if status == 401:
        where = (f"check the key in ${api_key_env}" if api_key_env
                 else "the endpoint wants a key: name its variable in api_key_env")
        return Failure("unauthorized", f"{said} ({where})")
    if status == 403:
        return Failure("forbidden", f"{said} (the key is not allowed to use model {model!r})")
    if status == 404:
        return Failure("not_found", f"{said} (is model {model!r} served there, and does the URL "
                                    f"end in the API root, e.g. /v1?)")
    if status == 429:
        return Failure("rate_limited", f"{said} (rate limited)")
    if status == 408:
        return Failure("timeout", said)
    if is_retryable_status(status):
        return Failure("server_error", said)
    return Failure("bad_request", said)


def from_connection(error: BaseException, base_url: str, timeout_s: float,
                    timed_out: bool) -> Failure:
    """Returns the failure of a request that got no HTTP answer, from the exception chain."""
    if timed_out:
        return Failure("timeout", f"no answer from {base_url} within {timeout_s:g} s")
    chain = _chain(error)
    for link in chain:
        if isinstance(link, ssl.SSLError):
            return Failure("tls_error", f"TLS with {base_url} failed: {link} (does the server "
                                        f"speak https? is its certificate trusted here?)")
        if isinstance(link, socket.gaierror):
            return Failure("dns_error", f"cannot resolve the host of {base_url}: {link}")
        if isinstance(link, ConnectionRefusedError):
            return Failure("connection_refused", f"connection refused by {base_url}: no "
                                                 f"server listens there (is it running? is the "
                                                 f"port right?)")
    return Failure("connection_error", f"cannot reach {base_url}: {chain[-1]}")


def _chain(error: BaseException) -> list[BaseException]:
    """Returns the error and every exception under it (__cause__, else __context__)."""
    chain, seen = [], set()
    while error is not None and id(error) not in seen:
        chain.append(error)
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return chain


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
