"""How candidates are scored: sandboxed workers, the compile -> correctness -> latency cascade, the FitnessActor."""

HARNESS_VERSION = "fitness-7"
"""Bumped whenever a change to the cascade could change a verdict or a timing; part of
every Evaluation and of the baseline-timing cache key. fitness-5: a light callable whose
runs drift (first vs last third) is timed again (`timing_rules.drifted`). fitness-6: warm-up
and graph capture are staged beside other work (`timing.stage`), and the device is held
alone only for the timing proper (`timing.time_staged`); a candidate compiles for every case
before its first call, on stand-ins, launches withheld (`Worker.precompile`). fitness-7: a
light callable waits for the fastest clock the judge's checkers read lately, not only its own
process's (`timing.time_staged`'s `peak_mhz`); a baseline compiles on stand-ins, launching
nothing, while candidates are timed (`Checker.warm_baseline`), and first runs when staged."""
