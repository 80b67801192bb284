"""What the LLM costs is said and bounded: a `budget.max_usd` that could not stop a run (its
model has no price, so every call counts as $0) is refused before anything starts, and
`evo report` shows the tokens and dollars spent per candidate and per correct candidate,
computed from every call of `llm_calls/`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.builtin import common
from evo import campaign, config as config_lib
from scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
FIXED = common.baseline_source("vector_add")
BROKEN = FIXED.replace("(x + y)", "(x - y)")


def _config(max_usd, **operators) -> dict:
    return {"campaign": {"name": "priced", "tasks": ["vector_add"]},
            "operators": {"mode": "llm", "base_url": "http://127.0.0.1:9/v1",
                          "model": "free-model", **operators},
            "budget": {"max_usd": max_usd}}


def test_max_usd_on_a_model_without_a_price_refuses_to_start_and_says_what_to_set(tmp_path):
    path = tmp_path / "unpriced.toml"
    path.write_text('[campaign]\nname = "unpriced"\ntasks = ["vector_add"]\n[operators]\n'
                    'mode = "llm"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "free-model"\n'
                    '[budget]\nmax_usd = 5.0\n')
    ran = subprocess.run([sys.executable, "-m", "evo", "run", str(path), "--out",
                          str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)

    assert ran.returncode == 2, ran.stderr[-2000:]
    assert ("budget.max_usd = 5 cannot stop this run: model 'free-model' has no price in "
            "operators.price_usd_per_mtok") in ran.stderr
    assert 'operators.price_usd_per_mtok = { "free-model" = [' in ran.stderr
    assert "budget.max_usd = 0" in ran.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize("max_usd, operators", [
    (0, {}),  # the user says the model is free
    (5.0, {"price_usd_per_mtok": {"free-model": [0.5, 1.5]}}),
    (None, {}),  # no cap to stop anything
], ids=["max_usd-0", "priced", "no-cap"])
def test_max_usd_is_accepted_with_a_price_or_at_zero(max_usd, operators):
    config = config_lib.from_dict(_config(max_usd, **operators))
    assert config.budget.max_usd == max_usd


def test_a_built_in_list_price_counts_as_a_price():
    config = config_lib.from_dict(_config(5.0, model="gpt-4.1"))
    assert config.operators.model == "gpt-4.1"


def _answer(source, note):
    return f"{note}\n\n```python\n{source}\n```\n"


@pytest.mark.slow  # campaign-level: `make test-fast` leaves it out
def test_report_shows_tokens_and_dollars_per_candidate_and_per_correct_candidate(
        interpreter_fitness, tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    script = [_answer(BROKEN, "A first try."), "No code this time, sorry.",
              _answer(FIXED, "The sign was wrong: add.")]
    out = tmp_path / "run"
    with ScriptedServer(script) as server:
        config = config_lib.from_dict({
            "campaign": {"name": "costed", "tasks": ["vector_add"], "seed_with_baseline": False},
            "search": {"generations": 3, "population": 1, "offspring": 1, "islands": 1},
            "operators": {"mode": "llm", "base_url": server.base_url, "model": "scripted-model",
                          "api_key_env": "SCRIPTED_KEY",
                          "price_usd_per_mtok": {"scripted-model": [1000.0, 2000.0]}},
            "budget": {"max_usd": 1000.0},
            "fitness": {"device": "interpreter", "workers": 1}})
        campaign.run_campaign(config, out, fitness_actors=interpreter_fitness)

    calls = pd.read_parquet(out / "llm_calls")
    rows = pd.read_parquet(out / "evaluations")
    made = rows[rows.llm_model.notna()]
    assert len(calls) == 3 and len(made) == 2 and made.correct.sum() == 1  # one answer had no code
    tokens = int(calls.prompt_tokens.sum() + calls.completion_tokens.sum())
    usd = float(calls.cost_usd.sum())
    assert usd > 0

    reported = subprocess.run([sys.executable, "-m", "evo", "report", str(out), "--json"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert reported.returncode == 0, reported.stderr[-2000:]
    cost = json.loads(reported.stdout)["llm_cost"]
    assert (cost["calls"], cost["tokens"], cost["candidates"], cost["correct"]) == (3, tokens, 2, 1)
    assert cost["usd"] == pytest.approx(usd)
    assert cost["per_candidate"] == pytest.approx({"tokens": tokens / 2, "usd": usd / 2})
    assert cost["per_correct"] == pytest.approx({"tokens": tokens, "usd": usd})

    printed = subprocess.run([sys.executable, "-m", "evo", "report", str(out)], cwd=ROOT,
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "COLUMNS": "200"})
    assert printed.returncode == 0, printed.stderr[-2000:]
    lines = printed.stdout.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("LLM cost")):]
    per_candidate = next(line for line in table if "per candidate" in line).split()
    per_correct = next(line for line in table if "per correct candidate" in line).split()
    assert f"${usd / 2:,.4f}" in per_candidate and f"{tokens / 2:,.0f}" in per_candidate
    assert f"${usd:,.4f}" in per_correct and f"{tokens:,.0f}" in per_correct
