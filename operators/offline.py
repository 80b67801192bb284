"""Offline operators: mutation and crossover of launch configurations, block sizes and designs.

No LLM: a child differs from its parent(s) only in knobs (see `operators.knobs`), rewritten
in the source text, so it is always valid Python defining the same entry point. A module with
a per-shape table (`operators.tables`) is varied per bucket: a mutation moves one knob of one
bucket, and with `DESIGN_PROBABILITY` it switches a design knob (the algorithm) instead of a
tuning one; a crossover takes whole bucket entries from the second parent. Every choice draws
from the `random.Random` passed in, so a seed fixes the children. Also exposes the knob space
of a source, for benchmarks that sweep it exhaustively.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Iterator, Mapping, Sequence

from evo.records import Breeding, Candidate, Child, Task, candidate_id, make_candidate
from operators import knobs as knobs_lib
from operators import parsing
from operators import tables
from operators.context import OperatorContext

NEIGHBOUR_PROBABILITY = 0.7
"""Chance that a mutation moves a knob one step (to the next allowed value) rather than anywhere."""

DESIGN_PROBABILITY = 0.3
"""Chance that a mutation of a source with design knobs (see `operators.tables`) switches the
algorithm (a looped reduction, split-K...) rather than tunes it; drawn only when it has one."""


class NoKnobsError(ValueError):
    """The candidate has no tunable knob, so offline operators cannot vary it."""


def knob_space(task: Task, source: str, backend: str) -> dict[str, tuple[int, ...]]:
    """Returns {knob key: the values it may take} for `source` on `backend` (empty: nothing to tune)."""
    _check(task, source, "source")
    return {k.key: k.values for k in knobs_lib.find(source, backend) if len(k.values) > 1}


def unvaried(tasks: Sequence[Task], backend: str) -> dict[str, str]:
    """Returns {task name: why} for each task whose baseline the offline operators cannot vary
    on `backend`: no knob, or not a module defining its entry point. Its islands can only keep
    the baseline (each breeding slot fails with NoKnobsError), so a campaign says so once."""
    why = {}
    for task in tasks:
        try:
            if not knob_space(task, task.baseline_source or "", backend):
                why[task.name] = "no knob"
        except (SyntaxError, ValueError) as error:
            why[task.name] = str(error)
    return why


def apply_knobs(task: Task, source: str, settings: Mapping[str, int], backend: str) -> str:
    """Returns `source` with the knobs in `settings` (keys as `knob_space` names them) set."""
    child = knobs_lib.apply(source, knobs_lib.find(source, backend), settings)
    _check(task, child, "rewritten source")
    return child


def sweep(task: Task, source: str, backend: str) -> Iterator[dict[str, int]]:
    """Yields every knob setting of `source` whose launches stay within the block-size cap."""
    found = [k for k in knobs_lib.find(source, backend) if len(k.values) > 1]
    for values in itertools.product(*(k.values for k in found)):
        settings = {k.key: v for k, v in zip(found, values)}
        if all(_within_cap(found, settings, k) for k in found):
            yield settings


def mutate(task: Task, parent: Candidate, rng: random.Random, backend: str,
           context: OperatorContext | None = None) -> Candidate:
    """Returns a child of `parent` with one knob moved to a different allowed value."""
    found = knobs_lib.find(parent.source, backend)
    settings, note = _mutation(found, {k.key: k.value for k in found}, rng, task, parent)
    source = apply_knobs(task, parent.source, settings, backend)
    return _child(task, source, (parent,), "offline_mutation", note, context)


def crossover(task: Task, a: Candidate, b: Candidate, rng: random.Random, backend: str,
              context: OperatorContext | None = None) -> Candidate:
    """Returns a child with `a`'s code and a mix of `a`'s and `b`'s knob values, different from both.

    Knobs are matched by key; each one the parents disagree on comes from `b` with even odds
    (at least one does). Knobs of one bucket of a per-shape table travel together: an entry
    comes from `b` whole, so a bucket's design and its tuning stay consistent. When the mix
    equals a parent (they differ in one knob, say), one knob is mutated on top; with nothing
    shared to mix, the child is a mutation of `a`.
    """
    found = knobs_lib.find(a.source, backend)
    values_a = {k.key: k.value for k in found}
    values_b = {k.key: k.value for k in knobs_lib.find(b.source, backend)}
    differing = [k for k in found if k.key in values_b and values_b[k.key] != k.value
                 and values_b[k.key] in k.values]
    settings = dict(values_a)
    notes = []
    groups: dict[str, list[knobs_lib.Knob]] = {}
    for knob in differing:  # a table entry is one gene; any other knob is its own
        groups.setdefault(knob.launch if knob.launch.startswith(tables.TABLE) else knob.key, []).append(knob)
    if groups:
        names = list(groups)
        picked = [n for n in names if rng.random() < 0.5] or [rng.choice(names)]
        from_b = [k for n in picked for k in groups[n]]
        for knob in from_b:
            settings[knob.key] = values_b[knob.key]
        notes.append("from B: " + ", ".join(f"{k.key}={values_b[k.key]}" for k in from_b))
    parents_ids = {a.id, b.id}
    source = apply_knobs(task, a.source, settings, backend)
    for _ in range(20):
        if candidate_id(source) not in parents_ids:
            break
        settings, note = _mutation(found, settings, rng, task, a)
        notes.append(note)
        source = apply_knobs(task, a.source, settings, backend)
    else:
        raise NoKnobsError(f"task {task.name}: could not make a crossover of {a.id} and {b.id} "
                           f"that differs from both parents")
    return _child(task, source, (a, b), "offline_crossover", "; ".join(notes), context)


def _mutation(found: list[knobs_lib.Knob], settings: dict[str, int], rng: random.Random, task: Task,
              parent: Candidate) -> tuple[dict[str, int], str]:
    """Returns (settings with one knob moved, a note saying which)."""
    choices = {k.key: [v for v in k.values if v != settings[k.key]
                       and _within_cap(found, {**settings, k.key: v}, k)] for k in found}
    movable = [k for k in found if choices[k.key]]
    if not movable:
        raise NoKnobsError(f"task {task.name}: candidate {parent.id} has no tunable launch or block-size knob "
                           f"(no literal block size or launch option at a kernel[grid](...) call, in a "
                           f"triton.Config or assigned to a name a launch passes on; no kernel launched "
                           f"only from outside the module; no {tables.TABLE} table)")
    design = [k for k in movable if k.kind == "design"]
    if design and rng.random() < DESIGN_PROBABILITY:
        knob = rng.choice(design)
        value = rng.choice(choices[knob.key])
        return {**settings, knob.key: value}, f"design {knob.key}: {settings[knob.key]} -> {value}"
    tuning = [k for k in movable if k.kind != "design"] or movable
    knob = rng.choice(tuning)
    current = settings[knob.key]
    options = choices[knob.key]
    ladder = knob.values  # sorted; a step is to the next value up or down (x2 or /2 for sizes)
    position = ladder.index(current) if current in ladder else 0
    neighbours = [v for v in options if v in ladder[max(0, position - 1):position + 2]]
    value = rng.choice(neighbours if neighbours and rng.random() < NEIGHBOUR_PROBABILITY else options)
    return {**settings, knob.key: value}, f"{knob.key}: {current} -> {value}"


def _within_cap(found: list[knobs_lib.Knob], settings: Mapping[str, int], knob: knobs_lib.Knob) -> bool:
    """Returns True if `knob`'s launch keeps its block-size product within the cap (or the parent's)."""
    if knob.kind not in ("block", "tile") or not knob.launch:
        return True
    sizes = [k for k in found if k.launch == knob.launch and k.kind in ("block", "tile")]
    product = math.prod(settings[k.key] for k in sizes)
    return product <= max(knobs_lib.MAX_BLOCK_ELEMENTS, math.prod(k.value for k in sizes))


def _child(task: Task, source: str, parents: tuple[Candidate, ...], operator: str, note: str,
           context: OperatorContext | None) -> Candidate:
    first = parents[0]
    generation = context.generation if context else max(p.generation for p in parents) + 1
    island = context.island if context else first.island
    return make_candidate(task.name, source, parents=tuple(p.id for p in parents), operator=operator,
                          generation=generation, island=island, strategy=f"offline: {note}")


def _check(task: Task, source: str, what: str) -> None:
    failure = parsing.check_module(source, task.entry_point)
    if failure:
        raise ValueError(f"task {task.name}: {what} is not a valid module: {failure}")


async def offline_mutation(breeding: Breeding, parents: Sequence) -> Child:
    """Mutation in the toolbox's shape: one parent."""
    (parent,) = parents
    return Child(mutate(breeding.task, parent.candidate, breeding.rng, breeding.backend),
                 "offline_mutation")


async def offline_crossing(breeding: Breeding, parents: Sequence) -> Child:
    """Crossover of launch knobs in the toolbox's shape: two parents."""
    first, second = parents
    return Child(crossover(breeding.task, first.candidate, second.candidate, breeding.rng,
                           breeding.backend), "offline_crossover")


async def offline_fresh(breeding: Breeding, parents: Sequence) -> Child:
    """The offline stand-in for the generator: a fresh variant of the task's baseline."""
    baseline = make_candidate(breeding.task.name, breeding.task.baseline_source)
    return Child(mutate(breeding.task, baseline, breeding.rng, breeding.backend),
                 "offline_mutation")
