"""How candidates are scored: sandboxed workers, the compile -> correctness -> latency
cascade, the FitnessActor. This module is the face the engine sees; the rest of `fitness` is
its own (attributes load on first use, so a sandboxed worker importing `fitness.sandbox`
pays for none of them)."""

import importlib

HARNESS_VERSION = "fitness-31"
"""Bumped whenever a change to the walk could change a verdict or a timing of a built-in
task (history: CHANGELOG.md)."""
EXTERNAL_HARNESS_VERSION = "external-harness-26"
"""The same for external-suite tasks, whose stage plan runs their suite's own harness."""


def harness_version(suite: str) -> str:
    """Returns the version of the walk that scores tasks of `suite`: part of every
    Evaluation and of the keys of what the judge remembers across candidates."""
    return HARNESS_VERSION if suite == "builtin" else EXTERNAL_HARNESS_VERSION

_FACE = {
    "Settings": "fitness.settings", "Limits": "fitness.settings",
    "SANDBOX_MODES": "fitness.settings",
    "Evaluator": "fitness.evaluator",
    "FitnessActor": "fitness.actor", "start_actors": "fitness.actor",
    "DeviceError": "fitness.device", "DeviceInfo": "fitness.device",
    "evaluate_files": "fitness.eval_cli", "UsageError": "fitness.eval_cli",
    "gate_files": "fitness.static_gate_cli",
}


def __getattr__(name: str):
    if name not in _FACE:
        raise AttributeError(f"module 'fitness' has no attribute {name!r}")
    return getattr(importlib.import_module(_FACE[name]), name)
