"""Each LLM role through the real client and the scripted server: what its request carries, what its child is."""

import asyncio

import pytest

from benchmarks import registry
from evo.records import Evaluation, make_candidate
from operators import crossover, generator, optimizer, reflector, retrieval
from operators.budget import Budget
from operators.context import OperatorContext
from operators.llm_client import BudgetExceeded, LLMClient
from scripted_server import Error, Reply, ScriptedServer

from kernel_variants import vector_add_at

TASK = registry.load().get("vector_add")
CONTEXT = OperatorContext(knowledge="Wavefront = 64 lanes.", one_shot=True, generation=3, island=2, temperature=0.7)


def answer(source, notes="Strategy: bigger blocks\nFewer programs, same bytes."):
    return f"{notes}\n\n```python\n{source}```\n"


def variant(block_size):
    return vector_add_at(block_size)


def run(server, role_call, **client_settings):
    """Builds a client on `server`, awaits role_call(client), returns (offspring, call rows)."""
    settings = dict(model="scripted-model", base_url=server.base_url, api_key_env="", max_retries=1,
                    backoff_base_s=0.01, prices={"scripted-model": (1.0, 1.0)})
    settings.update(client_settings)
    client = LLMClient(**settings)

    async def main():
        try:
            return await role_call(client)
        finally:
            await client.aclose()
    return asyncio.run(main()), client.drain_calls()


def user_prompt(server, index=0):
    messages = server.requests[index]["messages"]
    assert messages[0]["role"] == "system"
    return messages[1]["content"]


def correct_eval(candidate, speedup):
    return Evaluation(candidate.id, "timed", True, True, case_names=("N=1025 fp32",), latency_us=(10.0 / speedup,),
                      ref_latency_us=(10.0,), speedup=speedup, timing_meaningful=True)


def test_generator_prompt_carries_instruction_knowledge_and_an_exemplar():
    with ScriptedServer([answer(variant(2048))]) as server:
        offspring, rows = run(server, lambda c: generator.generate(TASK, c, CONTEXT, sample_index=5))
    prompt = user_prompt(server)
    exemplar = retrieval.default_index().best(TASK)
    assert TASK.instruction.strip() in prompt and "Wavefront = 64 lanes." in prompt
    assert exemplar.source in prompt and TASK.baseline_source not in prompt
    assert server.requests[0]["temperature"] == 0.7
    child = offspring.candidate
    assert offspring.failure == "" and child.source == variant(2048)
    assert (child.operator, child.parents, child.generation, child.island) == ("generator", (), 3, 2)
    assert child.lineage_debug_count == 0 and child.strategy.startswith("Strategy: bigger blocks")
    assert child.llm.request_hash == rows[0]["request_hash"] and child.llm.model == "scripted-model"
    assert rows[0]["role"] == "generator" and rows[0]["sample_index"] == 5


def test_generator_without_one_shot_shows_no_example():
    context = OperatorContext(knowledge="", one_shot=False)
    with ScriptedServer([answer(variant(512))]) as server:
        offspring, _ = run(server, lambda c: generator.generate(TASK, c, context))
    assert offspring.candidate is not None
    assert "example" not in user_prompt(server).lower() and "Hardware notes" not in user_prompt(server)


def test_reflector_request_carries_the_code_and_the_error():
    parent = make_candidate(TASK.name, variant(100), lineage_debug_count=1)
    failing = Evaluation(parent.id, "compile", False, False, "compile_error",
                         "CompilationError: arange's range must be a power of 2, got 100")
    fixed = variant(128)
    with ScriptedServer([answer(fixed, "Analysis: 100 is not a power of two.")]) as server:
        offspring, rows = run(server, lambda c: reflector.reflect(TASK, parent, failing, c, CONTEXT))
    prompt = user_prompt(server)
    assert "arange's range must be a power of 2, got 100" in prompt
    assert "compile_error" in prompt and parent.source in prompt
    child = offspring.candidate
    assert child.source == fixed and child.parents == (parent.id,) and child.operator == "reflector"
    assert child.lineage_debug_count == 2 and child.strategy.startswith("Analysis:")
    assert rows[0]["role"] == "reflector"


def test_optimizer_history_is_sent_slowest_first_and_best_is_the_parent():
    history = [(make_candidate(TASK.name, variant(b)), s) for b, s in ((256, 1.3), (64, 0.6), (512, 0.95))]
    history = [(c, correct_eval(c, s)) for c, s in history]
    with ScriptedServer([answer(variant(4096))]) as server:
        offspring, _ = run(server, lambda c: optimizer.optimize(TASK, history, c, CONTEXT))
    prompt = user_prompt(server)
    positions = [prompt.index(f'("BLOCK_SIZE", {b})') for b in (64, 512, 256)]
    assert positions == sorted(positions)
    assert "Speedup over the baseline: 0.6x" in prompt and "Speedup over the baseline: 1.3x" in prompt
    assert offspring.candidate.parents == (history[0][0].id,) and offspring.candidate.operator == "optimizer"


def test_optimizer_keeps_only_the_best_of_a_long_history():
    history = [(make_candidate(TASK.name, variant(1 << p)), 0.1 * p) for p in range(4, 12)]
    history = [(c, correct_eval(c, s)) for c, s in history]
    context = OperatorContext(max_history=3)
    with ScriptedServer([answer(variant(64))]) as server:
        run(server, lambda c: optimizer.optimize(TASK, history, c, context))
    prompt = user_prompt(server)
    assert "Kernel 3 of 3" in prompt
    assert '("BLOCK_SIZE", 256)' not in prompt and '("BLOCK_SIZE", 2048)' in prompt


def test_crossover_request_carries_both_parents():
    a, b = make_candidate(TASK.name, variant(256)), make_candidate(TASK.name, variant(2048))
    with ScriptedServer([answer(variant(1024 * 4))]) as server:
        offspring, _ = run(server, lambda c: crossover.crossover(TASK, a, b, [correct_eval(a, 1.1),
                                                                              correct_eval(b, 0.9)], c, CONTEXT))
    prompt = user_prompt(server)
    assert a.source in prompt and b.source in prompt and "Kernel A" in prompt and "Kernel B" in prompt
    assert offspring.candidate.parents == (a.id, b.id) and offspring.candidate.operator == "crossover"


@pytest.mark.parametrize("text, reason", [
    ("I would use bigger blocks.", "no_code_block"),
    ("```python\ndef vector_add(x, y:\n```", "syntax_error"),
    ("```python\ndef add(x, y):\n    return x\n```", "missing_entry_point"),
    ("```python\ndef vector_add(x, y):\n    return x + y\n", "no_code_block"),  # cut off by max_tokens
    # bare code, as TritonBench's recorded replies are: its own failure, what GEAK-eval meets
    ("import torch\n\ndef add(x, y):\n    return x\n", "missing_entry_point"),
    ("import torch\n\ndef vector_add(x, y:\n    return x\n", "syntax_error"),
])
def test_unusable_answers_are_failed_offspring_with_a_reason(text, reason):
    with ScriptedServer([text]) as server:
        offspring, rows = run(server, lambda c: generator.generate(TASK, c, CONTEXT))
    assert offspring.candidate is None and offspring.failure.startswith(reason)
    assert offspring.reply.success and rows[0]["success"]


def test_failed_call_is_a_failed_offspring():
    with ScriptedServer([Error(500), Error(500)]) as server:
        offspring, rows = run(server, lambda c: generator.generate(TASK, c, CONTEXT))
    assert offspring.candidate is None and offspring.failure.startswith("llm_error: HTTP 500")
    assert not rows[0]["success"]


def test_budget_refusal_stops_the_role_before_sending():
    with ScriptedServer([Reply(answer(variant(512)))]) as server:
        with pytest.raises(BudgetExceeded):
            run(server, lambda c: generator.generate(TASK, c, CONTEXT), budget=Budget(max_tokens=100))
    assert server.requests == []


def test_the_last_usable_block_wins():
    text = "Sketch:\n```python\nBLOCK = 64\n```\nFull module:\n" + answer(variant(64), "")
    with ScriptedServer([text]) as server:
        offspring, _ = run(server, lambda c: generator.generate(TASK, c, CONTEXT))
    assert offspring.candidate.source == variant(64)
    assert "BLOCK = 64" in offspring.candidate.strategy
