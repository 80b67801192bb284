"""What a role returns, and the one path every LLM role takes: prompt -> call -> parse -> child."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from evo.records import Candidate, Child, Task, make_candidate
from operators import parsing, prompting
from operators.context import OperatorContext
from operators.llm_client import LLMClient, LLMReply
from operators.replay import Position


@dataclasses.dataclass(frozen=True)
class Offspring:
    """A role's result: a child Candidate, or None with the reason (`failure`) it could not be made.

    `reply` is the LLM call behind it (None for offline operators); a failed call or an
    unusable answer still costs tokens, which the client's call log has recorded.
    """

    candidate: Candidate | None
    failure: str = ""
    reply: LLMReply | None = None


async def ask(role: str, task: Task, prompt: str, client: LLMClient, context: OperatorContext,
              sample_index: int, parents: Sequence[Candidate], lineage_debug_count: int = 0) -> Offspring:
    """Sends `prompt` for `role` and returns the child the answer defines, or why there is none."""
    position = Position(task.name, context.island, context.generation)  # replay may match by it
    reply = await client.complete(role, prompting.messages(prompt), sample_index,
                                  temperature=context.temperature, position=position)
    if not reply.success:
        return Offspring(None, f"llm_error: {reply.error}", reply)
    parsed = parsing.extract(reply.text, task.entry_point)
    if parsed.failure:
        return Offspring(None, parsed.failure, reply)
    child = make_candidate(task.name, parsed.source, parents=tuple(p.id for p in parents), operator=role,
                           generation=context.generation, island=context.island,
                           lineage_debug_count=lineage_debug_count, strategy=parsed.notes, llm=reply.usage)
    return Offspring(child, "", reply)


def as_child(offspring: Offspring, operator: str) -> Child:
    """The toolbox's record of an LLM role's result."""
    return Child(offspring.candidate, operator, offspring.failure or "")
