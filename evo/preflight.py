"""Checks made before a campaign starts anything: its results folder, and its LLM endpoint.

The results folder must be writable and have room for a generation's rows, or the
campaign would run until its first write fails. The endpoint check is made by an LLM
campaign only (`--no-preflight` skips it).

Why before Ray: a typo in `operators.base_url` or `operators.model` otherwise costs Ray's
start-up, the fitness workers' cold start and a generation of retried calls before anything
says so, and leaves a results folder behind; here it costs one request (see
`LLMClient.preflight` for which) and leaves nothing but the error.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

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


ROW_BYTES = 64 * 1024
"""Room counted per evaluation row when checking the results folder: a row holds the
candidate's source and verdict, a few KiB in Parquet; the rest is margin for its LLM-call
rows and the checkpoint."""


def check_results_folder(out: Path, rows_per_generation: int, reserve_bytes: int = 0) -> None:
    """Raises ConfigError, one line, unless `out` (or the folder it will be made in) is a
    writable folder with room for one generation's rows and `reserve_bytes` more.

    Why a real write and not os.access: root passes every permission check but still meets
    a read-only file system, and a file where the folder should be shows only on trying."""
    existing = Path(out).absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"results folder {out}: {existing} is a file, not a folder; "
                          "choose another --out (nothing was started)")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise ConfigError(f"results folder {out}: cannot write in {existing} "
                          f"({error.strerror}); choose another --out (nothing was started)"
                          ) from None
    needed = rows_per_generation * ROW_BYTES + reserve_bytes
    free = shutil.disk_usage(existing).free
    if free < needed:
        raise ConfigError(f"results folder {out}: {free // 1024} KiB free in {existing}, one "
                          f"generation needs about {needed // 1024} KiB ({rows_per_generation} "
                          f"rows); free some space or choose another --out (nothing was started)")
