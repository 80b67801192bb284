"""How candidates are scored: sandboxed workers, the compile -> correctness -> latency cascade, the FitnessActor."""

HARNESS_VERSION = "fitness-9"
"""Bumped whenever a change to the cascade could change a verdict or a timing; part of
every Evaluation and of the baseline-timing cache key. What each version changed is in
CHANGELOG.md."""
