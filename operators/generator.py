"""GEAK's generator as an operator: a fresh kernel from the task, hardware notes and one example.

Used to seed an empty island and to restart a lineage caught in the debugging trap.
"""

from __future__ import annotations

from typing import Sequence

from evo.records import Breeding, Child, Task
from operators import prompting, retrieval
from operators.context import OperatorContext
from operators.llm_client import LLMClient
from operators.offspring import Offspring, as_child, ask


async def generate(task: Task, client: LLMClient, context: OperatorContext, sample_index: int = 0) -> Offspring:
    """Returns a new kernel for `task` (no parents)."""
    example = None
    if context.one_shot:
        exemplar = retrieval.default_index().best(task)
        example = (exemplar.name, exemplar.source) if exemplar else None
    prompt = prompting.generator_prompt(task, context.knowledge, example)
    return await ask("generator", task, prompt, client, context, sample_index, parents=())


async def generator(breeding: Breeding, parents: Sequence) -> Child:
    """The generator in the toolbox's shape (`evo.records.Breeding`); no parents."""
    return as_child(await generate(breeding.task, breeding.client, breeding.context,
                                   breeding.sample_index), "generator")
