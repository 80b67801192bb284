"""Budgets: the campaign stops cleanly at a cap and says which one."""

import pandas as pd
import pytest

from evo import campaign, checkpoint, config as config_lib
from scripted_server import Reply, ScriptedServer

from kernel_variants import vector_add_at

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out


def _variant(request):
    """Answers every call with the baseline at another block size, 100 completion tokens."""
    block = 256 * (1 + len(request["messages"][-1]["content"]) % 4)
    source = vector_add_at(block)
    return Reply(f"Strategy: block {block}.\n```python\n{source}\n```", prompt_tokens=50,
                 completion_tokens=100)


def test_usd_cap_counts_calls_in_flight_and_stops_the_campaign(interpreter_fitness, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    with ScriptedServer(_variant) as server:
        config = config_lib.from_dict({
            "campaign": {"name": "usd", "tasks": ["vector_add"]},
            "search": {"generations": 4, "population": 2, "offspring": 2, "islands": 1},
            # A call reserves its prompt estimate + 100 completion tokens at $1000 per million
            # completion tokens: about $0.10. Two fit under $0.25 at once; a third never does.
            "operators": {"mode": "llm", "base_url": server.base_url, "model": "m",
                          "api_key_env": "SCRIPTED_KEY", "max_completion_tokens": 100,
                          "price_usd_per_mtok": {"m": [0.0, 1000.0]}},
            "fitness": {"device": "interpreter", "workers": 1},
            "budget": {"max_usd": 0.25}})
        summary = campaign.run_campaign(config, tmp_path / "run",
                                        fitness_actors=interpreter_fitness)
        sent = len(server.requests)

    assert summary.stopped_by == "max_usd"
    assert sent == 2 and summary.spend.usd <= 0.25
    assert summary.generations_done == 2  # the generation whose calls were refused still ends
    calls = pd.read_parquet(tmp_path / "run" / "llm_calls")
    assert len(calls) == 2 and abs(calls.cost_usd.sum() - summary.spend.usd) < 1e-9
    assert checkpoint.load(tmp_path / "run").generation_done == 2
    assert "stopped by the max_usd cap" in summary.text()


@pytest.mark.parametrize("cap", ["max_gpu_seconds", "max_wall_seconds"])
def test_gpu_and_wall_caps_stop_before_the_next_generation(interpreter_fitness, tmp_path, cap):
    config = config_lib.from_dict({
        "campaign": {"name": "caps", "tasks": ["vector_add"]},
        "search": {"generations": 5, "population": 2, "offspring": 2},
        "fitness": {"device": "interpreter", "workers": 1},
        "budget": {cap: 0.01}})
    summary = campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)

    assert summary.stopped_by == cap
    assert summary.generations_done == 0  # scoring the seeds alone took the cap
    used = {"max_gpu_seconds": summary.spend.gpu_seconds,
            "max_wall_seconds": summary.spend.wall_seconds}[cap]
    assert used >= 0.01
    parts = [part.name for part in (tmp_path / "run" / "evaluations").glob("part-*.parquet")]
    assert parts == ["part-00000-vector_add-i000.parquet"]  # the seed's row, nothing bred
    found = summary.tasks["vector_add"]
    assert (found.candidates, found.correct) == (1, 1)
    assert found.speedup_text() == "n/a (interpreter)"  # correct; no best by interpreter speed
    assert checkpoint.load(tmp_path / "run").generation_done == 0
