"""One-shot retrieval: the exemplar kernel most similar in code to the task's, by BM25 over code tokens.

GEAK found that retrieving by code similarity beats retrieving by instruction similarity,
so the query is the task's baseline kernel (its instruction when it has none). The corpus
is operators/exemplars/, short Triton kernels written for this project. The task's own
baseline is never returned: an exemplar that defines the task's entry point, or whose
normalized source is nearly the baseline's, is excluded.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import difflib
import functools
import math
import pathlib
import re
from typing import Sequence

from evo.records import Task, normalize_source, parse_source

EXEMPLARS_DIR = pathlib.Path(__file__).parent / "exemplars"
NEAR_IDENTICAL = 0.8
"""difflib ratio of the normalized sources' identifier sequences at or above which an
exemplar counts as the task's baseline."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclasses.dataclass(frozen=True)
class Exemplar:
    """One example kernel module: `name` is both the file stem and its entry point."""

    name: str
    path: pathlib.Path
    source: str
    summary: str  # first line of the module docstring


def load_exemplars(folder: pathlib.Path = EXEMPLARS_DIR) -> list[Exemplar]:
    """Returns the exemplars of `folder` in name order; each must define a function named like its file."""
    exemplars = []
    for path in sorted(folder.glob("*.py")):
        source = path.read_text()
        tree = parse_source(source, filename=str(path))
        if not any(isinstance(n, ast.FunctionDef) and n.name == path.stem for n in tree.body):
            raise ValueError(f"exemplar {path} must define a top-level function `{path.stem}`")
        summary = (ast.get_docstring(tree) or "").strip().splitlines()
        exemplars.append(Exemplar(path.stem, path, source, summary[0] if summary else ""))
    return exemplars


def code_tokens(text: str) -> list[str]:
    """Returns the lower-cased identifiers of `text`, each dotted chain also split into its parts.

    `tl.sum(x, axis=0)` gives ["tl.sum", "tl", "sum", "x", "axis"]; snake_case names also
    give their words, so `row_max` matches `max` and `row`.
    """
    tokens = []
    for match in _IDENTIFIER.findall(text):
        word = match.lower()
        tokens.append(word)
        parts = [p for p in re.split(r"[._]", word) if p]
        if len(parts) > 1:
            tokens.extend(parts)
    return tokens


class BM25:
    """Okapi BM25 over token lists (k1 and b as in the usual defaults)."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.counts = [collections.Counter(doc) for doc in documents]
        self.lengths = [len(doc) for doc in documents]
        self.mean_length = sum(self.lengths) / max(1, len(self.lengths))
        document_frequency = collections.Counter(t for counts in self.counts for t in counts)
        n = len(documents)
        self.idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in document_frequency.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        """Returns one score per document; higher is more similar.

        A query term counts once however often it repeats: a baseline's per-shape table
        names its knobs dozens of times, which would pull every query toward the exemplar
        with the most block names rather than the one doing the same work.
        """
        terms = set(query)
        result = []
        for counts, length in zip(self.counts, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / (self.mean_length or 1))
            result.append(sum(self.idf[t] * counts[t] * (self.k1 + 1) / (counts[t] + norm)
                              for t in terms if t in counts))
        return result


class ExemplarIndex:
    """The exemplar corpus indexed for retrieval."""

    def __init__(self, exemplars: Sequence[Exemplar]):
        self.exemplars = list(exemplars)
        self._bm25 = BM25([code_tokens(e.source) for e in self.exemplars])

    def ranked(self, task: Task) -> list[Exemplar]:
        """Returns the exemplars usable for `task`, most similar first (ties in name order)."""
        return [e for e in self._by_similarity(task) if not is_task_baseline(e, task)]

    def best(self, task: Task) -> Exemplar | None:
        """Returns the most similar usable exemplar, or None if every one is excluded."""
        return next((e for e in self._by_similarity(task) if not is_task_baseline(e, task)), None)

    def _by_similarity(self, task: Task) -> list[Exemplar]:
        query = task.baseline_source if task.baseline_source.strip() else task.instruction
        scores = self._bm25.scores(code_tokens(query))
        order = sorted(range(len(self.exemplars)), key=lambda i: (-scores[i], self.exemplars[i].name))
        return [self.exemplars[i] for i in order]


def is_task_baseline(exemplar: Exemplar, task: Task) -> bool:
    """Returns True if showing `exemplar` would hand the model the task's own solution."""
    if exemplar.name == task.entry_point:
        return True
    if not task.baseline_source.strip():
        return False
    # Compare token sequences of the normalized sources: comments and layout do not count.
    a = _IDENTIFIER.findall(normalize_source(exemplar.source))
    b = _IDENTIFIER.findall(normalize_source(task.baseline_source))
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.quick_ratio() >= NEAR_IDENTICAL and matcher.ratio() >= NEAR_IDENTICAL


@functools.lru_cache(maxsize=1)
def default_index() -> ExemplarIndex:
    """Returns the index of operators/exemplars/ (built once per process)."""
    return ExemplarIndex(load_exemplars())
