"""GEAK's optimizer as an operator: the island's correct kernels, slowest first -> strategy + code.

Showing the history in ascending order lets the model read the trend (what made kernels
faster) and ends the prompt on the best kernel, the one to beat.
"""

from __future__ import annotations

from typing import Sequence

from evo.records import Breeding, Candidate, Child, Evaluation, Task
from operators import prompting
from operators.context import OperatorContext
from operators.llm_client import LLMClient
from operators.offspring import Offspring, as_child, ask


async def optimize(task: Task, history: Sequence[tuple[Candidate, Evaluation]], client: LLMClient,
                   context: OperatorContext, sample_index: int = 0) -> Offspring:
    """Returns a child meant to beat the fastest of `history` (correct (Candidate, Evaluation) pairs).

    Its parent is the fastest kernel shown (the one the prompt asks to beat).
    """
    if not history:
        raise ValueError(f"optimize() needs at least one correct candidate of task {task.name}")
    wrong = [c.id for c, e in history if not e.correct]
    if wrong:
        raise ValueError(f"optimize() history must hold correct candidates only; incorrect: {wrong}")
    shown = prompting.ascending(history)[-context.max_history:]
    prompt = prompting.optimizer_prompt(task, history, context.knowledge, context.max_history)
    return await ask("optimizer", task, prompt, client, context, sample_index,
                     parents=(shown[-1][0],))


async def optimizer(breeding: Breeding, parents: Sequence) -> Child:
    """The optimizer in the toolbox's shape: it reads the island's history, not `parents`."""
    return as_child(await optimize(breeding.task, list(breeding.history), breeding.client,
                                   breeding.context, breeding.sample_index), "optimizer")
