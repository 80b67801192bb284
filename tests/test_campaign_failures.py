"""Campaigns whose LLM calls fail: they stop cleanly and say why, or go on when it is transient.

Against the scripted loopback server through the real `openai` client: a server that dies
mid-run, garbage bodies, answers without code, 503s; and `evo run` itself, in a process of
its own, against a port nothing listens on.
"""

import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evo import breaker, campaign, checkpoint, cli, config as config_lib
from evo.config import ConfigError
from scripted_server import Die, Error, Garbage, Reply, ScriptedServer

from kernel_variants import vector_add_at

ROOT = Path(__file__).resolve().parents[1]


def _kernel(request):
    """Answers with the baseline at a block size drawn from the prompt: a usable answer."""
    block = 256 * (1 + len(request["messages"][-1]["content"]) % 4)
    source = vector_add_at(block)
    return Reply(f"Strategy: block {block}.\n```python\n{source}\n```")


def _config(base_url, generations, seeds=False, offspring=2, islands=1, migration_interval=0,
            **operators):
    return config_lib.from_dict({
        "campaign": {"name": "failures", "tasks": ["vector_add"], "seed_with_baseline": seeds},
        "search": {"generations": generations, "population": 2, "offspring": offspring,
                   "islands": islands, "migration_interval": migration_interval},
        "operators": {"mode": "llm", "base_url": base_url, "model": "m", "api_key_env": "",
                      "max_retries": 0, **operators},
        "fitness": {"device": "interpreter", "workers": 1}})


def _calls(folder):
    return pd.read_parquet(folder / "llm_calls").sort_values(["generation", "sample_index"])


@pytest.mark.slow
def test_server_dying_mid_run_stops_after_that_generation_and_resume_continues(
        interpreter_fitness, tmp_path):
    served = []

    def answer(request):
        served.append(request)
        return _kernel(request) if len(served) <= 4 else Die()

    out = tmp_path / "run"
    # Islands meet at every generation (migration), so the first four requests are exactly
    # generation 1 of both: without that meeting one island may reach generation 2 first.
    with ScriptedServer(answer) as server:
        config = _config(server.base_url, generations=3, seeds=True, islands=2,
                         migration_interval=1)
        summary = campaign.run_campaign(config, out, fitness_actors=interpreter_fitness)

    assert summary.stopped_by == breaker.STOPPED_BY and summary.failed
    assert summary.generations_done == 2 and checkpoint.load(out).generation_done == 2
    assert "the endpoint cannot answer" in summary.trip.reason
    assert set(summary.trip.kinds) <= {"connection_error", "connection_refused"}
    assert summary.trip.since_generation == 2
    calls = _calls(out)
    assert calls[calls.generation == 1].failure_kind.isna().all()
    assert calls[calls.generation == 2].failure_kind.notna().all()
    text = summary.text(resume_command="evo run c.toml --out run --resume")
    assert "stopped after generation 2 because its LLM calls keep failing" in text
    assert "failing since" in text and "(generation 2)" in text
    assert "fix the endpoint, then continue with: evo run c.toml --out run --resume" in text
    parts_1 = sorted((out / "evaluations").glob("part-00001-*.parquet"))
    written = [part.read_bytes() for part in parts_1]
    assert [len(pd.read_parquet(part)) for part in parts_1] == [2, 2]  # one part per island

    with ScriptedServer(_kernel) as revived:  # a new port: base_url may change on resume
        resumed = campaign.run_campaign(_config(revived.base_url, generations=3, seeds=True,
                                                islands=2, migration_interval=1),
                                        out, resume=True, fitness_actors=interpreter_fitness)

    assert resumed.generations_done == 3 and resumed.stopped_by is None
    assert [part.read_bytes() for part in parts_1] == written  # rows before the stop intact
    rows = pd.read_parquet(out / "evaluations")
    assert sorted(rows.generation.unique()) == [0, 1, 3]  # 0: the seeds
    assert resumed.llm.calls == 12 and sum(resumed.llm.failed.values()) == 4


@pytest.mark.slow
def test_garbage_bodies_stop_the_campaign_in_its_first_generation(interpreter_fitness, tmp_path,
                                                                  capsys):
    with ScriptedServer(lambda request: Garbage()) as server:
        summary = campaign.run_campaign(_config(server.base_url, generations=5), tmp_path / "run",
                                        fitness_actors=interpreter_fitness)

    assert summary.failed and summary.generations_done == 1
    assert summary.trip.kinds == collections.Counter(malformed_response=2)
    assert "malformed response from" in summary.trip.last_error
    progress = capsys.readouterr().out
    assert "gen 0/5 vector_add: no seed kernel" in progress
    assert "LLM 2 calls, 2 failed (malformed_response 2)" in progress
    _report_says_what_stopped_it(tmp_path / "run", summary)


def _report_says_what_stopped_it(folder, summary):
    """`evo report` on the stopped campaign, which holds no evaluation: the stop campaign.json
    records and the failed calls by kind, in the JSON and in the text."""
    assert not list((folder / "evaluations").glob("*.parquet"))
    as_json = CliRunner().invoke(cli.app, ["report", str(folder), "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = json.loads(as_json.stdout)
    assert report["evaluations"] == 0 and report["figures"] == []
    stop = report["stop"]
    assert stop["stopped_by"] == breaker.STOPPED_BY
    assert stop["reason"] == "stopped after generation 1 because its LLM calls keep failing"
    assert stop["details"] == summary.trip.lines()
    assert report["llm"]["calls"] == report["llm"]["failed"] == 2
    assert list(report["llm"]["kinds"]) == ["malformed_response"]
    failed = report["llm"]["kinds"]["malformed_response"]
    assert failed["calls"] == 2 and failed["example"].startswith("malformed response from")

    text = CliRunner().invoke(cli.app, ["report", str(folder)])
    assert text.exit_code == 0, text.output
    assert "has no evaluations" in text.stdout
    assert "last run: stopped after generation 1 because its LLM calls keep failing" in text.stdout
    assert f"  why: {summary.trip.reason}" in text.stdout
    assert "LLM calls: 2, 2 failed" in text.stdout
    assert re.search(r"malformed_response\s.*\b2\b.*malformed response from", text.stdout)


@pytest.mark.slow
def test_answers_without_code_are_their_own_kind_and_a_run_of_them_trips(interpreter_fitness,
                                                                         tmp_path, capsys):
    prose = lambda request: Reply("I would use a larger block size.")  # noqa: E731
    with ScriptedServer(prose) as server:
        summary = campaign.run_campaign(
            _config(server.base_url, generations=5, max_consecutive_failures=3),
            tmp_path / "run", fitness_actors=interpreter_fitness)

    # Generation 1 has two unusable answers (an island's unusable answers alone do not trip);
    # generation 2 brings the run to four, past the limit of three.
    assert summary.failed and summary.generations_done == 2
    assert summary.trip.kinds == collections.Counter(no_code_block=4)
    assert "4 LLM calls in a row gave no usable answer" in summary.trip.reason
    calls = _calls(tmp_path / "run")
    assert calls.success.all() and (calls.failure_kind == "no_code_block").all()
    assert calls.error.str.startswith("no_code_block: no ``` fence").all()
    progress = capsys.readouterr().out
    assert "LLM 2 calls, 2 failed (no_code_block 2)" in progress
    assert "last LLM failure: no_code_block: no ``` fence" in progress


@pytest.mark.slow
def test_transient_failures_keep_their_retries_and_never_trip_it_alone(interpreter_fitness,
                                                                      tmp_path):
    with ScriptedServer(lambda request: Error(503)) as server:
        summary = campaign.run_campaign(
            _config(server.base_url, generations=2, max_retries=1, max_consecutive_failures=1),
            tmp_path / "run", fitness_actors=interpreter_fitness)
        sent = len(server.requests)

    assert summary.stopped_by is None and not summary.failed and summary.generations_done == 2
    assert sent == 8  # four calls, each retried once
    calls = _calls(tmp_path / "run")
    assert (calls.failure_kind == "server_error").all() and (calls.attempts == 2).all()
    assert summary.llm.failed == collections.Counter(server_error=4)
    assert "last LLM failure: HTTP 503 from" in summary.text()


def test_breaker_counts_failures_in_the_order_they_finished_across_islands():
    def row(minute, kind=None):
        return {"finished_at": pd.Timestamp(f"2026-01-01 00:{minute:02d}", tz="UTC"),
                "failure_kind": kind, "error": kind and f"{kind} at {minute}"}

    watch = breaker.Breaker(max_consecutive_failures=3)
    # Island 1's success (minute 2) breaks the run; 503s neither count nor break it.
    assert watch.observe(1, {("t", 0): [row(1, "no_code_block"), row(3, "syntax_error")],
                             ("t", 1): [row(2), row(4, "server_error")]}) is None
    trip = watch.observe(2, {("t", 0): [row(5, "bad_request")],
                             ("t", 1): [row(6, "empty_response"), row(7, "server_error")]})
    assert trip is not None and trip.since_generation == 1
    assert trip.kinds == collections.Counter(syntax_error=1, bad_request=1, empty_response=1)
    assert trip.last_error == "empty_response at 6"
    assert trip.since == pd.Timestamp("2026-01-01 00:03", tz="UTC")


def test_recorded_replies_without_code_never_trip_the_breaker():
    # generations_from: a recorded reply's failure is the model's; no endpoint to stop for
    recorded = [{"finished_at": pd.Timestamp(f"2026-01-01 00:{minute:02d}", tz="UTC"),
                 "failure_kind": "no_code_block", "error": "no_code_block: no ``` fence",
                 "recorded_from": f"gens.jsonl:{minute}"} for minute in range(5)]
    assert breaker.Breaker(max_consecutive_failures=3).observe(0, {("t", 0): recorded}) is None


def test_max_consecutive_failures_is_validated_and_settable_with_set(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\nname = "x"\n')
    assert config_lib.load(path, ["operators.max_consecutive_failures=5"]).operators \
        .max_consecutive_failures == 5
    assert config_lib.load(path).operators.max_consecutive_failures == 20
    with pytest.raises(ConfigError, match=r"operators\.max_consecutive_failures: .*greater than "
                                          r"or equal to 1 \(got 0\)"):
        config_lib.load(path, ["operators.max_consecutive_failures=0"])


@pytest.mark.slow
def test_evo_run_against_a_dead_endpoint_exits_3_with_a_summary_a_user_can_act_on(tmp_path):
    with ScriptedServer([]) as server:
        url = server.base_url  # closed on exit: connections to it are refused
    config_path = tmp_path / "night.toml"
    config_path.write_text(f"""
[campaign]
name = "night"
tasks = ["vector_add"]
[search]
generations = 10
population = 2
offspring = 2
islands = 2
[operators]
mode = "llm"
base_url = "{url}"
model = "m"
api_key_env = ""
max_retries = 0
[fitness]
device = "interpreter"
workers = 1
""")
    out, home = tmp_path / "run", tmp_path / "home"
    home.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))},
           "HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "evo", "run", str(config_path), "--out", str(out),
                           "--no-preflight"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    output = done.stdout + done.stderr

    assert done.returncode == 3, output
    assert "gen 0/10 vector_add: seed kernel correct, eval time" in done.stdout
    assert "GPU" not in done.stdout and "device time" not in done.stdout
    assert "LLM 4 calls, 4 failed (connection_refused 4)" in done.stdout
    assert f"last LLM failure: connection refused by {url}" in done.stdout
    assert "campaign stopped after generation 1 because its LLM calls keep failing" in done.stdout
    # Islands run at their own pace: the first island whose generation starved trips it.
    assert re.search(r"why: the endpoint cannot answer: no usable answer in generation 1 for "
                     r"vector_add island [01]\n", done.stdout)
    assert "(generation 1): connection_refused 2" in done.stdout
    assert (f"continue with: evo run {config_path} --out {out} --resume"
            in done.stdout)
    assert "Token authentication" not in output  # Ray's notice, nothing to act on
    assert not (home / ".ray" / "auth_token").exists()  # the token lived in the process only
    assert checkpoint.load(out).generation_done == 1
    assert (_calls(out).failure_kind == "connection_refused").all()
