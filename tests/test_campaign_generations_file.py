"""Campaigns that start from recorded model output (`operators.generations_from`), on the
TritonBench-revised fixture suite under the interpreter: the recorded generation is evaluated
as the generator's candidate and logged as a recorded LLM call; offline, the offline operators
evolve it; in llm mode, the other roles ask the endpoint and the generator never does."""

import json
import pathlib

import pandas as pd
import pytest

from evo import campaign, config as config_lib
from operators import parsing
from scripted_server import ScriptedServer

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
GENERATIONS = FIXTURES / "recorded_generations" / "tritonbench_g.jsonl"
REPLIES = [json.loads(line)["predict"] for line in GENERATIONS.read_text().splitlines()]


def _config(task, search, **operators):
    return config_lib.from_dict({
        "campaign": {"name": "from-file", "tasks": [task], "suite": "tritonbench-revised",
                     "path": str(FIXTURES / "external" / "tritonbench"),
                     "seed_with_baseline": operators.pop("seed_with_baseline", True)},
        "search": {"generations": 1, "islands": 1, **search},
        "operators": {"generations_from": str(GENERATIONS), **operators},
        "fitness": {"device": "interpreter", "workers": 1}})


def _recorded_row(calls, line):
    (row,) = calls[calls.role == "generator"].itertuples()
    assert (row.model, row.recorded_from, row.response) == (
        "tritonbench_g", f"{GENERATIONS}:{line}", REPLIES[line - 1])
    assert (row.generation, row.latency_s, row.cost_usd, row.success) == (0, 0.0, 0.0, True)
    assert pd.isna(row.prompt_tokens) and pd.isna(row.failure_kind) and len(row.request_hash) == 64


def test_offline_campaign_evaluates_the_recorded_generation_and_mutates_it(
        interpreter_fitness, tmp_path):
    config = _config("scale_shift", {"population": 2, "offspring": 1}, mode="offline")
    summary = campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)

    rows = pd.read_parquet(tmp_path / "run" / "evaluations").sort_values(["generation", "operator"])
    assert [(r.generation, r.operator) for r in rows.itertuples()] == [
        (0, "generator"), (0, "seed"), (1, "offline_mutation")]
    recorded = rows.iloc[0]
    assert recorded.source == parsing.extract(REPLIES[0], "scale_shift").source
    assert recorded.correct and recorded.llm_model == "tritonbench_g"
    _recorded_row(pd.read_parquet(tmp_path / "run" / "llm_calls"), line=1)
    assert summary.tasks["scale_shift"].correct >= 2


def test_llm_campaign_takes_the_generator_from_the_file_and_the_optimizer_from_the_endpoint(
        interpreter_fitness, tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    improved = parsing.extract(REPLIES[1], "row_max").source.replace("values", "row_values")
    with ScriptedServer([f"Rename for clarity.\n\n```python\n{improved}```\n"]) as server:
        config = _config("row_max", {"population": 1, "offspring": 1}, mode="llm",
                         seed_with_baseline=False, base_url=server.base_url,
                         model="scripted-model", api_key_env="SCRIPTED_KEY")
        campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)
        requests = list(server.requests)

    assert len(requests) == 1  # the optimizer's: the generator asked the file
    rows = pd.read_parquet(tmp_path / "run" / "evaluations").sort_values("generation")
    assert [(r.generation, r.operator, r.correct) for r in rows.itertuples()] == [
        (0, "generator", True), (1, "optimizer", True)]
    assert rows.iloc[0].source == parsing.extract(REPLIES[1], "row_max").source
    assert list(rows.iloc[1].parent_ids) == [rows.iloc[0].candidate_id]
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls")
    _recorded_row(calls, line=2)
    optimizer = calls[calls.role == "optimizer"].iloc[0]
    assert optimizer.model == "scripted-model" and pd.isna(optimizer.recorded_from)
