"""The lint: a quick check of a candidate module against the kernel-module contract, before it runs.

Not a security boundary. The candidate is assumed to run arbitrary code in its sandboxed
worker; the judge's clock, judge-made inputs and one worker per candidate decide verdicts
(docs/design.md, "Fitness cascade and its trust boundary"), and they hold with the lint off.
What the lint adds is feedback in milliseconds, naming the line and what to write instead,
on breaches a model makes by habit: an entry point that launches no Triton kernel (`launch`),
file, process or network I/O, and changes to process-wide settings (`lint`). It reads the
source (pure `ast`, nothing imported) after blanking the code that never runs on import
(`strip`), so what is judged is what the worker loads. `rules` holds the tables, `contract`
renders them for the prompts.
"""

from __future__ import annotations

import dataclasses
import functools

from evo.records import parse_source
from fitness.judge.policy import launch, lint
from fitness.judge.policy.strip import harness_imports, harness_names, runnable_source

__all__ = ["Violation", "check", "runnable_source"]


@dataclasses.dataclass(frozen=True)
class Violation:
    """One breach: where it is, which rule, and what to write instead."""

    line: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"line {self.line}: [{self.rule}] {self.detail}"


def check(source: str, task) -> Violation | None:
    """Returns the first breach in source order, None if the module passes the lint.

    `source` must parse (the syntax check runs first); a module nested too deeply to walk
    is refused rather than crashing the judge.
    """
    try:
        found = _breaches(runnable_source(source, task), task.entry_point, task.harness or "")
        excused = _excused(task)
    except (RecursionError, MemoryError):  # the parser reports deep nesting as MemoryError
        return Violation(1, "nesting", "the module nests too deeply to check; flatten its expressions")
    found = [f for f in found if (f[1], lint.code(f[0])) not in excused]
    if not found:
        return None
    node, rule, detail = min(found, key=lambda f: (f[0].lineno, f[0].col_offset))
    return Violation(node.lineno, rule, detail)


def _excused(task) -> frozenset[tuple[str, str]]:
    """Returns (rule, code) of each breach an external task's own reference commits, which
    its candidates may commit too: GEAK-eval runs its references so (a seed, a TF32 flag). A
    reference that launches no kernel (KernelBench's PyTorch model) excuses nothing."""
    if task.suite in ("builtin", "test") or not task.baseline_source:
        return frozenset()
    try:
        found = _breaches(runnable_source(task.baseline_source, task), task.entry_point, task.harness or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    keys = frozenset((rule, lint.code(node)) for node, rule, _ in found)
    return frozenset() if any(rule == "no-launch" for rule, _ in keys) else keys


@functools.lru_cache(maxsize=512)
def _breaches(source: str, entry_point: str, harness: str) -> tuple[lint.Finding, ...]:
    """Returns every breach of a (stripped) module, in no order."""
    tree = parse_source(source)
    aliases = lint.imported(tree, harness_imports(harness))
    unlaunched = launch.unlaunched(tree, frozenset({entry_point}) | harness_names(harness), entry_point, aliases)
    extra = [] if unlaunched is None else [(unlaunched, "no-launch", launch.detail(entry_point))]
    return tuple(lint.findings(tree, aliases) + extra)
