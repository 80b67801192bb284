"""One retry policy for every walk, built-in or external: a candidate is walked once more,
on fresh processes, when what ended its walk may be a neighbour's fault."""

from __future__ import annotations

RETRIED_DEATHS = frozenset({"worker_crash", "harness_error"})
"""A worker or checker death of these kinds may be a neighbour's fault or a pool restart."""
RETRIED_FAILURES = frozenset({"out_of_memory"})
"""Failures a process reported that may be a neighbour's fault too: a GPU's memory is shared
by every worker and checker of the pool, and the candidates walked beside this one (inputs
of a GiB and more a case) can leave it none."""


def worth_retrying(kind: str, attempt: int, died: bool = True) -> bool:
    """Whether a walk that ended in `kind` on its `attempt`-th try (from 0) is tried again;
    `died`: a process died (a WorkerFault) rather than reporting the failure."""
    return attempt == 0 and kind in (RETRIED_DEATHS if died else RETRIED_FAILURES)
