"""Crossover as an LLM operator: two correct kernels with their metrics -> one combining both ideas."""

from __future__ import annotations

from typing import Sequence

from evo.records import Breeding, Candidate, Child, Evaluation, Task
from operators import prompting
from operators.context import OperatorContext
from operators.llm_client import LLMClient
from operators.offspring import Offspring, as_child, ask


async def crossover(task: Task, parent_a: Candidate, parent_b: Candidate, evals: Sequence[Evaluation],
                    client: LLMClient, context: OperatorContext, sample_index: int = 0) -> Offspring:
    """Returns a child of `parent_a` and `parent_b`; `evals` are their evaluations, in that order."""
    if len(evals) != 2:
        raise ValueError(f"crossover() needs the two parents' evaluations, got {len(evals)}")
    pairs = [(parent_a, evals[0]), (parent_b, evals[1])]
    for candidate, evaluation in pairs:
        if evaluation.candidate_id != candidate.id:
            raise ValueError(f"crossover(): evaluation of {evaluation.candidate_id} given for candidate {candidate.id}")
    prompt = prompting.crossover_prompt(task, pairs, context.knowledge)
    return await ask("crossover", task, prompt, client, context, sample_index, parents=(parent_a, parent_b))


async def llm_crossover(breeding: Breeding, parents: Sequence) -> Child:
    """LLM crossover in the toolbox's shape: two correct parents."""
    first, second = parents
    return as_child(await crossover(breeding.task, first.candidate, second.candidate,
                                    (first.evaluation, second.evaluation), breeding.client,
                                    breeding.context, breeding.sample_index), "crossover")
