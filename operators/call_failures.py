"""Why an LLM call gave nothing usable: one word to count it by (`kind`), one line to act on.

The client turns whatever a request raised into a `Failure` here, so the preflight, the
call log, the progress lines, the summary and the engine's circuit breaker all name a
failure the same way. Kinds fall in three groups, which the breaker treats differently:
  transient: rate_limited, server_error, timeout. The client retries them; a busy or
      restarting endpoint recovers, so they never stop a campaign by themselves.
  endpoint: connection_refused, dns_error, tls_error, connection_error, unauthorized,
      forbidden, not_found, malformed_response. The endpoint, as configured, cannot answer.
  answer: anything else (bad_request, empty_response, and the parser's no_code_block,
      syntax_error, missing_entry_point). This request or this answer was unusable; only a
      run of them says that something is wrong.

Nothing here imports `openai`: the client hands over the HTTP status and the server's
message, or a connection error's exception, whose standard-library types say what happened.
"""

from __future__ import annotations

import dataclasses
import socket
import ssl

from operators import retry

TRANSIENT = frozenset({"rate_limited", "server_error", "timeout"})
ENDPOINT = frozenset({"connection_refused", "dns_error", "tls_error", "connection_error",
                      "unauthorized", "forbidden", "not_found", "malformed_response"})


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
    if retry.is_retryable_status(status):
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
