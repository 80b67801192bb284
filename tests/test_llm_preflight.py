"""The endpoint check before a campaign starts, and the kind and line of every failed LLM call.

Real parts throughout: the `evo` command line, the `openai` client over HTTP, the scripted
loopback server (or a port nothing listens on, a host that does not resolve, https spoken
to a plain-HTTP server).
"""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evo.cli import app
from operators.llm_client import LLMClient
from scripted_server import Error, ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
KEY_VARIABLE = "KE_PREFLIGHT_KEY"
CONFIG = """
[campaign]
name = "preflight"
tasks = ["vector_add"]
[search]
generations = 1
[operators]
mode = "llm"
base_url = "{base_url}"
model = "{model}"
api_key_env = "{key_variable}"
[fitness]
device = "interpreter"
"""


def _config(tmp_path, base_url, model="m", key_variable=KEY_VARIABLE):
    path = tmp_path / "campaign.toml"
    path.write_text(CONFIG.format(base_url=base_url, model=model, key_variable=key_variable))
    return path


def _nothing_listens_url():
    with ScriptedServer([]) as server:
        return server.base_url  # closed on exit: connections to it are refused


@pytest.mark.slow
def test_refused_endpoint_stops_evo_run_with_one_line_and_exit_2_before_anything_starts(tmp_path):
    url = _nothing_listens_url()
    out = tmp_path / "run"
    env = {**os.environ, KEY_VARIABLE: "not-a-secret"}
    done = subprocess.run([sys.executable, "-m", "evo", "run", str(_config(tmp_path, url)),
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: LLM endpoint check for model 'm' failed: connection refused by "
                           f"{url}")
    assert "--no-preflight" in line
    assert not out.exists()  # nothing written but the error


@pytest.mark.parametrize("case, expected", [
    ("wrong key", f"HTTP 401 from {{url}}: Incorrect API key provided (check the key in "
                  f"${KEY_VARIABLE})"),
    ("unknown model", "{url} does not serve model 'typo-model' (it serves: served-model)"),
    ("https to an http server", "TLS with {url} failed"),
    ("unresolvable host", "cannot resolve the host of {url}"),
], ids=["401", "404-model", "tls", "dns"])
def test_unusable_endpoint_is_one_line_naming_url_model_and_cause(case, expected, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, "a-wrong-key")
    with ScriptedServer([], models=["served-model"], api_key="the-right-key") as server:
        url, model = server.base_url, "served-model"
        if case == "unknown model":
            monkeypatch.setenv(KEY_VARIABLE, "the-right-key")
            model = "typo-model"
        elif case == "https to an http server":
            url = url.replace("http://", "https://")
        elif case == "unresolvable host":
            url = "http://no-such-host.invalid/v1"
        out = tmp_path / "run"
        result = CliRunner().invoke(app, ["run", str(_config(tmp_path, url, model)),
                                          "--out", str(out)])
        chat_requests = len(server.requests)

    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"error: LLM endpoint check for model {model!r} failed: ")
    assert expected.format(url=url) in line
    assert not out.exists() and chat_requests == 0


def test_served_model_passes_the_check_without_spending_a_token():
    with ScriptedServer([], models=["served-model"]) as server:
        client = LLMClient(model="served-model", base_url=server.base_url, api_key_env="")

        async def check():
            try:
                await client.preflight()
            finally:
                await client.aclose()

        asyncio.run(check())
        assert server.requests == []  # answered from GET /v1/models/served-model


@pytest.mark.parametrize("entry, kind, words", [
    (Error(401), "unauthorized", "HTTP 401"),
    (Error(403), "forbidden", "not allowed to use model 'm'"),
    (Error(404), "not_found", "is model 'm' served there"),
    (Error(400, message="context too long"), "bad_request", "context too long"),
    (Error(429), "rate_limited", "rate limited"),
    (Error(503), "server_error", "HTTP 503"),
], ids=["401", "403", "404", "400", "429", "503"])
def test_a_failed_call_carries_its_kind_and_a_line_naming_the_endpoint(entry, kind, words,
                                                                       monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, "not-a-secret")
    with ScriptedServer([entry]) as server:
        url = server.base_url
        client = LLMClient(model="m", base_url=url, api_key_env=KEY_VARIABLE, max_retries=0)

        async def call():
            try:
                return await client.complete("generator", [{"role": "user", "content": "x"}])
            finally:
                await client.aclose()

        reply = asyncio.run(call())
    [row] = client.drain_calls()
    assert not reply.success and reply.failure_kind == kind == row["failure_kind"]
    assert url in reply.error and words in reply.error
    assert row["finished_at"] is not None


def test_sweep_checks_its_endpoint_before_any_cell_runs(tmp_path):
    url = _nothing_listens_url()
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f"""
[sweep]
name = "night"
[base.campaign]
name = "base"
tasks = ["vector_add"]
[base.operators]
mode = "llm"
base_url = "{url}"
model = "m"
api_key_env = ""
[grid]
"campaign.seed" = [0, 1]
""")
    out = tmp_path / "sweep"
    result = CliRunner().invoke(app, ["sweep", str(sweep_file), "--out", str(out)])

    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: sweep cell seed-0: LLM endpoint check for model 'm' failed: "
                           f"connection refused by {url}")
    assert not out.exists()
