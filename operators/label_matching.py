"""Which task a recorded model reply belongs to, found from the gold code the row carries.

TritonBench publishes model output as JSONL rows {instruction (or prompt), predict, label},
the label being the task's gold kernel and nothing else naming the task. A row belongs to the
reference (a campaign's task, or a gold file) whose code that label is, tried in this order:
  "exact": the label equals one reference's text (GEAK-eval's instruction file holds them);
  "contained": end-of-text tokens removed and whitespace collapsed, the label lies inside
    exactly one reference's code (GEAK-eval's revised files add a licence header; the
    DeepSeek set's labels are cut short); when the rows hold one reply per reference (a
    published set), those a different label took count only if no other holds the label
    (a cut-short label fits two files, one of them found already);
  "instruction": of several such (or of all, when none holds it), the one reference whose
    instruction text the row's prompt carries (revised files that rename calls).
Anything else is "ambiguous" (several fit) or "unmatched" (none does): counted, never guessed.
Rows with the same label and prompt (several samples of one task) share one match.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

HOWS = ("exact", "contained", "instruction", "ambiguous", "unmatched")
"""Every way a row can be matched, or not; `Match.how` takes one of them."""
END_TOKENS = ("<|im_end|>", "<|EOT|>")
"""End-of-text tokens some published labels keep (Qwen, DeepSeek)."""
_PREAMBLE_END = "following instruction."
"""Where the preamble every TritonBench instruction shares ends."""


@dataclasses.dataclass(frozen=True)
class Reference:
    """What a row may be matched to.

    Attributes:
      name: the task (or file) name a match reports.
      code: the texts a label may equal or lie inside (the gold file, the baseline kernel).
      instruction: the instruction a row's prompt would carry ("": none known).
    """

    name: str
    code: tuple[str, ...]
    instruction: str = ""


@dataclasses.dataclass(frozen=True)
class Match:
    """The reference a row belongs to (None when ambiguous or unmatched) and how it was found."""

    name: str | None
    how: str


def match_rows(rows: Sequence[Mapping], references: Sequence[Reference],
               one_row_each: bool = False) -> list[Match]:
    """Returns the Match of each row {label, prompt or instruction}, in row order;
    `one_row_each`: the rows hold one reply per reference (see the module docstring)."""
    index = _Index(references, one_row_each)
    known: dict[tuple[str, str], Match] = {}
    found = []
    for row in rows:
        key = (row.get("label") or "", row.get("prompt") or row.get("instruction") or "")
        if key not in known:
            known[key] = index.match(*key)
        found.append(known[key])
    return found


def counts(matches: Sequence[Match]) -> dict[str, int]:
    """Returns how many matches were found each way, every way of `HOWS` listed."""
    return {how: sum(match.how == how for match in matches) for how in HOWS}


def normalise(text: str) -> str:
    """Returns `text` without end-of-text tokens and with every run of whitespace one space."""
    for token in END_TOKENS:
        text = text.replace(token, "")
    return " ".join(text.split())


class _Index:
    """The references with their normalised code and instructions, and which label took which."""

    def __init__(self, references: Sequence[Reference], one_row_each: bool):
        self.references, self.one_row_each = list(references), one_row_each
        self.code = {ref.name: [normalise(text) for text in ref.code] for ref in self.references}
        self.bodies = {ref.name: _instruction_body(ref.instruction) for ref in self.references}
        self.taken: dict[str, str] = {}  # reference name -> the label that took it

    def match(self, label: str, prompt: str) -> Match:
        found = self._find(label, normalise(prompt))
        if found.name is not None:
            self.taken.setdefault(found.name, label)
        return found

    def _find(self, label: str, prompt: str) -> Match:
        exact = [ref for ref in self.references if label and label in ref.code]
        if len(exact) == 1:
            return Match(exact[0].name, "exact")
        cleaned = normalise(label)
        holding = [ref for ref in self.references
                   if cleaned and any(cleaned in code for code in self.code[ref.name])]
        free = [ref for ref in holding if self.taken.get(ref.name, label) == label]
        inside = exact or (self.one_row_each and free) or holding
        if len(inside) == 1:
            return Match(inside[0].name, "contained")
        told = [ref for ref in (inside or self.references)
                if self.bodies[ref.name] and self.bodies[ref.name] in prompt]
        if len(told) == 1:
            return Match(told[0].name, "instruction")
        return Match(None, "ambiguous" if len(told) > 1 or len(inside) > 1 else "unmatched")


def _instruction_body(instruction: str) -> str:
    """Returns an instruction without the preamble every TritonBench instruction shares,
    normalised ("" when nothing is left: an empty body would be in every prompt)."""
    return normalise(instruction.split(_PREAMBLE_END)[-1])
