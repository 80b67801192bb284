"""A campaign against the scripted OpenAI-compatible server: generator -> broken -> reflector -> fix."""

import json

import pandas as pd

from benchmarks.builtin import common
from evo import campaign, config as config_lib
from operators.scripted_server import ScriptedServer

FIXED = common.baseline_source("vector_add")
BROKEN = FIXED.replace("(x + y)", "(x - y)")


def _answer(source, note):
    return f"{note}\n\n```python\n{source}\n```\n"


def test_reflector_fixes_a_broken_kernel_and_the_fix_records_its_parent(interpreter_fitness, tmp_path,
                                                                        monkeypatch):
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
        summary = campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)
        requests = list(server.requests)

    rows = pd.read_parquet(tmp_path / "run" / "evaluations").sort_values("generation")
    broken, fixed = rows.iloc[0], rows.iloc[1]
    assert (broken.operator, broken.correct, broken.failure_kind) == ("generator", False, "mismatch")
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
