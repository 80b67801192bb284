"""A campaign against the scripted OpenAI-compatible server: broken kernel -> reflector -> fix."""

import json

import pandas as pd
import pytest

from benchmarks.builtin import common
from evo import campaign, config as config_lib
from operators.replay import ReplayMissError
from scripted_server import ScriptedServer

from kernel_variants import vector_add_at

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

FIXED = common.baseline_source("vector_add")
BROKEN = FIXED.replace("(x + y)", "(x - y)")


def _answer(source, note):
    return f"{note}\n\n```python\n{source}\n```\n"


def test_reflector_fixes_a_broken_kernel_and_the_fix_records_its_parent(
        interpreter_fitness, tmp_path, monkeypatch):
    assert BROKEN != FIXED
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    script = [_answer(BROKEN, "A first try."), _answer(FIXED, "The sign was wrong: add.")]
    with ScriptedServer(script) as server:
        config = config_lib.from_dict({
            "campaign": {"name": "scripted", "tasks": ["vector_add"], "seed_with_baseline": False},
            "search": {"generations": 2, "population": 1, "offspring": 1, "islands": 1},
            "operators": {"mode": "llm", "base_url": server.base_url, "model": "scripted-model",
                          "api_key_env": "SCRIPTED_KEY", "price_usd_per_mtok": {
                              "scripted-model": [1.0, 2.0]}},
            "fitness": {"device": "interpreter", "workers": 1}})
        summary = campaign.run_campaign(config, tmp_path / "run",
                                        fitness_actors=interpreter_fitness)
        requests = list(server.requests)

    rows = pd.read_parquet(tmp_path / "run" / "evaluations").sort_values("generation")
    broken, fixed = rows.iloc[0], rows.iloc[1]
    assert (broken.operator, broken.correct) == ("generator", False)
    assert broken.failure_kind == "mismatch"
    assert (fixed.operator, fixed.correct) == ("reflector", True)
    assert list(fixed.parent_ids) == [broken.candidate_id]
    assert fixed.lineage_debug_count == 1 and fixed.generation == 2 and fixed.island == 0

    reflector_prompt = json.dumps(requests[1]["messages"])
    assert "mismatch" in reflector_prompt
    assert "x - y" in reflector_prompt  # the failing code is shown
    trace_line = next(line for line in broken.error_trace.splitlines() if line.strip())
    assert trace_line.strip()[:40] in json.loads(reflector_prompt)[-1]["content"]

    calls = pd.read_parquet(tmp_path / "run" / "llm_calls")
    assert list(calls.role) == ["generator", "reflector"]
    assert calls.success.all() and (calls.cost_usd > 0).all()
    assert summary.spend.usd > 0 and summary.stopped_by is None
    assert summary.tasks["vector_add"].correct == 1


def test_replay_reproduces_a_recorded_campaigns_candidates_with_no_server(
        interpreter_fitness, tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    blocks = iter([256, 512, 128, 2048])
    answer = lambda request: _answer(  # noqa: E731
        vector_add_at(next(blocks)), "Strategy: blocks.")
    search = {"generations": 1, "population": 2, "offspring": 2, "islands": 2}
    with ScriptedServer(answer) as server:
        recorded = config_lib.from_dict({
            "campaign": {"name": "recorded", "tasks": ["vector_add"], "seed_with_baseline": False},
            "search": search, "fitness": {"device": "interpreter"},
            "operators": {"mode": "llm", "base_url": server.base_url, "model": "m",
                          "api_key_env": "SCRIPTED_KEY"}})
        campaign.run_campaign(recorded, tmp_path / "recorded", fitness_actors=interpreter_fitness)
    replayed = config_lib.from_dict({
        "campaign": {"name": "replayed", "tasks": ["vector_add"], "seed_with_baseline": False},
        "search": search, "fitness": {"device": "interpreter"},
        "operators": {"mode": "replay", "model": "m",
                      "replay_from": str(tmp_path / "recorded")}})
    campaign.run_campaign(replayed, tmp_path / "replayed", fitness_actors=interpreter_fitness)

    columns = ["island", "generation", "candidate_id", "operator", "correct"]
    first = pd.read_parquet(tmp_path / "recorded" / "evaluations")[columns]
    second = pd.read_parquet(tmp_path / "replayed" / "evaluations")[columns]
    assert first["candidate_id"].nunique() == 4
    pd.testing.assert_frame_equal(first, second)

    asks_more = replayed.model_copy(update={"search": replayed.search.model_copy(
        update={"offspring": 3})})
    with pytest.raises(ReplayMissError, match="never recorded"):
        campaign.run_campaign(asks_more, tmp_path / "miss", fitness_actors=interpreter_fitness)
