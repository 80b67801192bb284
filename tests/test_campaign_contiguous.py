"""A campaign whose LLM answers ordinary Triton (a wrapper calling `.contiguous()` under
`@torch.no_grad()`) breeds correct children: the gate refused every such child once, so
the LLM loop bred nothing (issue 29)."""

import itertools

import pandas as pd
import pytest

from evo import campaign, config as config_lib
from scripted_server import ScriptedServer

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

LLM_ROLES = {"generator", "reflector", "optimizer", "crossover"}

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@torch.no_grad()
def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    assert x.shape == y.shape, "x and y must have the same shape"
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE={block})
    return out
'''


def test_llm_children_written_with_contiguous_wrappers_are_correct(
        interpreter_fitness, tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    blocks = itertools.cycle([128, 256, 512, 1024, 2048, 4096])
    answer = lambda request: (  # noqa: E731
        "Made the inputs contiguous first.\n\n```python\n"
        f"{KERNEL.format(block=next(blocks))}```\n")
    with ScriptedServer(answer) as server:
        config = config_lib.from_dict({
            "campaign": {"name": "contiguous", "tasks": ["vector_add"], "seed_with_baseline": False},
            "search": {"generations": 2, "population": 2, "offspring": 2, "islands": 1},
            "operators": {"mode": "llm", "base_url": server.base_url, "model": "scripted-model",
                          "api_key_env": "SCRIPTED_KEY"},
            "fitness": {"device": "interpreter", "workers": 1}})
        summary = campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)

    rows = pd.read_parquet(tmp_path / "run" / "evaluations")
    assert len(rows) >= 4 and set(rows.operator) <= LLM_ROLES, rows[["operator", "generation"]]
    refused = rows[~rows.correct]
    assert refused.empty, "LLM children refused:\n" + "\n".join(
        f"{row.operator} gen {row.generation}: {row.failure_kind}: {row.error_trace[-600:]}"
        for row in refused.itertuples())
    assert summary.tasks["vector_add"].correct == len(rows)
