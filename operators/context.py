"""What an operator call needs to know besides its records: where the child lands and the switches."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class OperatorContext:
    """Per-call settings handed to every role by the engine.

    Attributes:
      knowledge: the hardware sheet to inject ("" when the `knowledge` module is switched off);
        see `operators.knowledge.sheet_for`.
      one_shot: add one retrieved example kernel to the generator's prompt.
      generation: generation the child is born in (set on the Candidate).
      island: island the child belongs to (set on the Candidate; placement reads it).
      temperature: sampling temperature of the call (GEAK samples at 1.0).
      backend: "cuda" | "rocm" | "interpreter", the fitness backend (offline knobs depend on it).
      max_history: most correct candidates shown to the optimizer (the best ones are kept).
      max_trace_chars: error traces longer than this are trimmed for the reflector.
    """

    knowledge: str = ""
    one_shot: bool = True
    generation: int = 0
    island: int = 0
    temperature: float = 1.0
    backend: str = "interpreter"
    max_history: int = 8
    max_trace_chars: int = 4000
