"""What a walk records per case: the largest errors of its checked calls, and which cases
were answered wrong.

A mismatch does not end a walk at once: the other cases are still checked, one call each,
so that the record says which cases are wrong and by how much (`Evaluation.case_names`,
`max_abs_err`, `rel_err`, NaN for a case not checked). The verdict stays the walk's first
failure: once a case is wrong, any later failure ends the walk with that mismatch.
"""

from __future__ import annotations

import math

from fitness.judge import checking
from fitness.judge.walk import Failed


class CaseErrors:
    """Per case (by name), the largest max_abs_err / rel_err seen, and the failures of wrong
    cases in the order they happened."""

    def __init__(self, names: list[str]):
        self.names = names
        self.max_abs_err = [math.nan] * len(names)
        self.rel_err = [math.nan] * len(names)
        self.wrong: list[tuple[int, Failed]] = []

    def note(self, at: int, verdict: dict) -> None:
        """Keeps the larger of case `at`'s errors and a checker verdict's."""
        for errors, key in ((self.max_abs_err, "max_abs_err"), (self.rel_err, "rel_err")):
            if key in verdict:
                errors[at] = verdict[key] if math.isnan(errors[at]) else max(errors[at], verdict[key])

    def wrong_at(self, at: int, failure: Failed) -> None:
        """Notes that case `at` was answered wrong (`failure.errors`: the checker's verdict)."""
        self.wrong.append((at, failure))
        self.note(at, failure.errors)

    def fields(self) -> dict:
        """Returns the Evaluation fields: case names and errors, aligned."""
        return {"case_names": tuple(self.names), "max_abs_err": tuple(self.max_abs_err),
                "rel_err": tuple(self.rel_err)}

    def first_mismatch(self, stopped_by: str = "") -> Failed:
        """Returns the walk's verdict: the first wrong case's failure, its detail led by which
        cases are wrong; `stopped_by`: the failure that stopped the checks of the others."""
        names = list(dict.fromkeys(self.names[at] for at, _ in self.wrong))
        summary = checking.wrong_cases(names, len(self.names))
        if stopped_by:
            summary += f" (the other cases were not all checked: a call failed with {stopped_by})"
        first = self.wrong[0][1]
        return Failed(first.stage, first.kind, f"{summary}; {first.detail}", first.errors)
