"""GEAK's reflector as an operator: a failing kernel and what went wrong -> analysis + a fix.

The child's `lineage_debug_count` is the parent's plus one, so the engine can abandon a
lineage that keeps failing (the debugging trap) after `max_debug_attempts`.
"""

from __future__ import annotations

from typing import Sequence

from evo.records import Breeding, Candidate, Child, Evaluation, Task
from operators import prompting
from operators.context import OperatorContext
from operators.llm_client import LLMClient
from operators.offspring import Offspring, as_child, ask


async def reflect(task: Task, parent: Candidate, evaluation: Evaluation, client: LLMClient,
                  context: OperatorContext, sample_index: int = 0) -> Offspring:
    """Returns a repaired child of the failing `parent` (its `evaluation` says how it failed)."""
    if evaluation.correct:
        raise ValueError(f"reflect() needs a failing parent; candidate {parent.id} of task {task.name} is correct")
    prompt = prompting.reflector_prompt(task, parent, evaluation, context.max_trace_chars)
    return await ask("reflector", task, prompt, client, context, sample_index, parents=(parent,),
                     lineage_debug_count=parent.lineage_debug_count + 1)


async def reflector(breeding: Breeding, parents: Sequence) -> Child:
    """The reflector in the toolbox's shape: one failing parent."""
    (parent,) = parents
    return as_child(await reflect(breeding.task, parent.candidate, parent.evaluation,
                                  breeding.client, breeding.context, breeding.sample_index),
                    "reflector")
