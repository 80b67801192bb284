"""Loaders that turn a local checkout of an external suite into Tasks carrying a harness.

Suites: "tritonbench-revised" and "rocm" (AMD-AGI/GEAK-eval), "kernelbench"
(ScalingIntelligence/KernelBench). Nothing is downloaded: the user points at a checkout.
Each module documents the folder layouts it accepts and its candidate contract.
"""

from __future__ import annotations

from benchmarks.external import kernelbench, rocm, tritonbench
from evo.records import Task

LOADERS = {
    tritonbench.SUITE: tritonbench.load,
    rocm.SUITE: rocm.load,
    kernelbench.SUITE: kernelbench.load,
}
SUITES = tuple(LOADERS)


class UnknownSuiteError(ValueError):
    """No loader for that suite name; the message lists the known ones."""


def load_suite(suite: str, path: str | None) -> list[Task]:
    """Returns the Tasks of `suite` read from the checkout at `path`.

    Raises UnknownSuiteError for an unknown suite, ValueError when `path` is missing or a
    file is malformed, FileNotFoundError when `path` holds no suite of that layout.
    """
    if suite not in LOADERS:
        raise UnknownSuiteError(f"unknown suite {suite!r}; known suites: builtin, {', '.join(SUITES)}")
    return LOADERS[suite](path)
