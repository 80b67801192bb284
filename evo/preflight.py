"""The endpoint check an LLM campaign makes before it starts anything (`--no-preflight` skips it).

Why before Ray: a typo in `operators.base_url` or `operators.model` otherwise costs Ray's
start-up, the fitness workers' cold start and a generation of retried calls before anything
says so, and leaves a results folder behind; here it costs one request (see
`LLMClient.preflight` for which) and leaves nothing but the error.
"""

from __future__ import annotations

import asyncio

from evo import wiring
from evo.config import Config, ConfigError


def check(config: Config) -> None:
    """Raises ConfigError, one line naming the model, the URL and what went wrong, unless the
    campaign's endpoint serves its model (no check outside `operators.mode = "llm"`)."""
    if config.operators.mode != "llm":
        return
    from operators.llm_client import EndpointUnusable

    client = wiring.llm_client(config)

    async def probe() -> None:
        try:
            await client.preflight()
        finally:
            await client.aclose()

    try:
        asyncio.run(probe())
    except EndpointUnusable as error:
        raise ConfigError(f"LLM endpoint check for model {config.operators.model!r} failed: "
                          f"{error} (nothing was started; --no-preflight skips this check)"
                          ) from None
