"""The LLM client through the real `openai` SDK over HTTP to the scripted loopback server."""

import asyncio
import pickle
import time

import pytest

from operators.budget import Budget
from operators.llm_client import BudgetExceeded, LLMClient
from scripted_server import Error, Garbage, NoChoices, Reply, ScriptedServer, Stall

KEY = "sk-test-very-secret-0123456789"
MESSAGES = [{"role": "system", "content": "You write Triton."}, {"role": "user", "content": "add two vectors"}]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("KE_TEST_KEY", KEY)


def make_client(server, **overrides):
    settings = dict(model="scripted-model", base_url=server.base_url, api_key_env="KE_TEST_KEY",
                    timeout_s=5.0, max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05,
                    prices={"scripted-model": (1.0, 2.0)})
    settings.update(overrides)
    return LLMClient(**settings)


def ask(client, *calls, return_exceptions=False):
    """Runs the calls [(role, messages, sample_index), ...] concurrently on a fresh loop."""
    async def main():
        try:
            return await asyncio.gather(*(client.complete(role, messages, index) for role, messages, index in calls),
                                        return_exceptions=return_exceptions)
        finally:
            await client.aclose()
    return asyncio.run(main())


def test_reply_carries_text_tokens_and_cost():
    with ScriptedServer([Reply("the answer", prompt_tokens=1000, completion_tokens=500)]) as server:
        client = make_client(server)
        [reply] = ask(client, ("generator", MESSAGES, 0))
    assert reply.success and reply.text == "the answer" and reply.attempts == 1
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (1000, 500)
    assert reply.usage.cost_usd == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert server.requests[0]["messages"] == MESSAGES
    assert server.requests[0]["temperature"] == 1.0 and server.requests[0]["model"] == "scripted-model"
    [row] = client.drain_calls()
    assert row["role"] == "generator" and row["success"] and row["response"] == "the answer"
    assert row["request_hash"] == reply.request_hash and len(reply.request_hash) == 64
    assert client.drain_calls() == []


def test_streamed_reply_is_assembled_with_usage():
    text = "```python\ndef f():\n    return 1\n```"
    with ScriptedServer([Reply(text, prompt_tokens=7, completion_tokens=9)]) as server:
        [reply] = ask(make_client(server, stream=True), ("optimizer", MESSAGES, 0))
    assert reply.success and reply.text == text
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (7, 9)
    assert server.requests[0]["stream"] is True


def test_retries_recover_from_429_and_500():
    with ScriptedServer([Error(429), Error(500), Error(503), "finally"]) as server:
        client = make_client(server)
        [reply] = ask(client, ("generator", MESSAGES, 0))
    assert reply.success and reply.text == "finally" and reply.attempts == 4
    assert len(server.requests) == 4
    assert client.drain_calls()[0]["attempts"] == 4


@pytest.mark.slow
def test_retry_after_is_honoured():
    with ScriptedServer([Error(429, retry_after_s=1), "ok"]) as server:
        [reply] = ask(make_client(server, backoff_max_s=5.0), ("generator", MESSAGES, 0))
    first, second = server.received
    assert reply.success
    assert second.time_s - first.time_s >= 0.95


def test_timeout_is_retried():
    with ScriptedServer([Stall(1.5), "after the stall"]) as server:
        [reply] = ask(make_client(server, timeout_s=0.3), ("reflector", MESSAGES, 0))
    assert reply.success and reply.text == "after the stall" and reply.attempts == 2


def test_retries_give_up_with_a_failed_reply():
    with ScriptedServer([Error(500)] * 3) as server:
        [reply] = ask(make_client(server, max_retries=2), ("generator", MESSAGES, 0))
    assert not reply.success and reply.attempts == 3 and "HTTP 500" in reply.error
    assert len(server.requests) == 3


def test_bad_request_is_not_retried():
    with ScriptedServer([Error(400, message="context too long")]) as server:
        [reply] = ask(make_client(server), ("generator", MESSAGES, 0))
    assert not reply.success and "context too long" in reply.error and len(server.requests) == 1


@pytest.mark.parametrize("entry, expected", [(Garbage(), "malformed response"), (NoChoices(), "no choices"),
                                             (Reply(""), "empty response")])
def test_garbage_and_empty_responses_are_recorded_failed_calls(entry, expected):
    with ScriptedServer([entry, "next call works"]) as server:
        client = make_client(server)
        [bad] = ask(client, ("generator", MESSAGES, 0))
        [good] = ask(client, ("generator", MESSAGES, 1))
    assert not bad.success and expected in bad.error and bad.text == ""
    assert good.success
    rows = client.drain_calls()
    assert [r["success"] for r in rows] == [False, True] and expected in rows[0]["error"]


def test_unreachable_endpoint_is_a_failed_reply_naming_the_url():
    with ScriptedServer([]) as server:
        url = server.base_url
    client = LLMClient(model="m", base_url=url, api_key_env="KE_TEST_KEY", max_retries=1, backoff_base_s=0.01)
    [reply] = ask(client, ("generator", MESSAGES, 0))
    assert not reply.success and url in reply.error and "after 2 attempts" in reply.error


def test_budget_cap_stops_further_calls_without_sending_them():
    # $1 per token both ways: each call reserves its prompt estimate + max_tokens (100).
    prices = {"scripted-model": (1e6, 1e6)}
    with ScriptedServer([Reply("a", prompt_tokens=10, completion_tokens=10)] * 5) as server:
        budget = Budget(max_usd=160.0)
        client = make_client(server, prices=prices, max_tokens=100, budget=budget)
        ask(client, ("generator", MESSAGES, 0))
        ask(client, ("generator", MESSAGES, 1))
        assert budget.spent_usd == 40.0 and budget.reserved_usd == 0.0
        sent = len(server.requests)
        # 40 spent + one reservation (117: 17 prompt + 100) fits under 160; a second in flight would not.
        sent_reply, refused = ask(client, ("generator", MESSAGES, 2), ("generator", MESSAGES, 3),
                                  return_exceptions=True)
        assert sent_reply.success
        assert isinstance(refused, BudgetExceeded) and "budget refused the generator call" in str(refused)
        assert len(server.requests) == sent + 1
        with pytest.raises(BudgetExceeded):
            ask(client, ("generator", MESSAGES, 4))
        assert len(server.requests) == sent + 1 and budget.spent_usd == 60.0
        assert budget.stopped_by == "max_usd"


def test_concurrency_limit_bounds_calls_in_flight():
    with ScriptedServer(lambda body: "x", latency_s=0.2) as server:
        client = make_client(server, max_concurrency=2)
        started = time.monotonic()
        replies = ask(client, *[("generator", MESSAGES, i) for i in range(4)])
        elapsed_s = time.monotonic() - started
    assert all(r.success for r in replies)
    assert elapsed_s >= 0.4  # four calls of 0.2 s, two at a time
    times = sorted(r.time_s for r in server.received)
    assert times[2] - times[0] >= 0.15


def test_api_key_reaches_the_server_but_no_log_repr_or_pickle():
    with ScriptedServer(["ok"]) as server:
        client = make_client(server)
        ask(client, ("generator", MESSAGES, 0))
    assert server.received[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(client)
    assert KEY not in str(client.drain_calls())
    assert KEY.encode() not in pickle.dumps(client)


def test_missing_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("KE_TEST_KEY")
    with pytest.raises(ValueError, match="KE_TEST_KEY is not set"):
        LLMClient(model="m", base_url="http://127.0.0.1:9/v1", api_key_env="KE_TEST_KEY")


def test_request_hash_depends_on_sample_index_and_temperature():
    with ScriptedServer(lambda body: "x") as server:
        client = make_client(server)
        async def main():
            replies = [await client.complete("generator", MESSAGES, 0),
                       await client.complete("generator", MESSAGES, 0),
                       await client.complete("generator", MESSAGES, 1),
                       await client.complete("generator", MESSAGES, 0, temperature=0.2)]
            await client.aclose()
            return replies
        same, again, other_index, other_temperature = asyncio.run(main())
    assert same.request_hash == again.request_hash
    assert len({same.request_hash, other_index.request_hash, other_temperature.request_hash}) == 3
    assert server.requests[3]["temperature"] == 0.2


def test_calls_waiting_for_a_slot_hold_no_budget():
    # One slot; each call reserves $117 and costs $20. Under a $140 cap both fit one after the
    # other, which they could not if the queued call had reserved while the first was in flight.
    prices = {"scripted-model": (1e6, 1e6)}
    with ScriptedServer([Reply("a", prompt_tokens=10, completion_tokens=10)] * 2, latency_s=0.1) as server:
        budget = Budget(max_usd=140.0)
        client = make_client(server, prices=prices, max_tokens=100, budget=budget, max_concurrency=1)
        replies = ask(client, ("generator", MESSAGES, 0), ("generator", MESSAGES, 1))
    assert all(r.success for r in replies) and budget.spent_usd == 40.0 and budget.stopped_by is None
