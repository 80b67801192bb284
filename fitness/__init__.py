"""How candidates are scored: sandboxed workers, the compile -> correctness -> latency cascade, the FitnessActor."""
