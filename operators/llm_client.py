"""The LLM client: Chat Completions over any OpenAI-compatible endpoint, or replay of a recording.

The only module that imports `openai`. One call, `complete(role, messages, sample_index,
position)`, returns an `LLMReply` and never raises for what an endpoint does wrong: a
malformed or empty response, a non-retryable status, or an endpoint still unreachable after
the retries is a failed reply whose reason is a `call_failures.Failure`. It raises only when
the campaign must stop or was misconfigured: `BudgetExceeded` (the call was not sent) and
`ReplayMissError` (replay was asked something never recorded, see `operators.replay`).
`preflight()`, the one check before a campaign starts, raises `EndpointUnusable`.

Retries are ours (the SDK's are off) so that each is counted and tested. The API key is read
from the named environment variable when the SDK client is built and held only by that SDK
object, which is dropped on pickling and never shown in repr or rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import hashlib
import json
import math
import os
import random
import time
from typing import Any, Mapping, Protocol, Sequence

import openai

from evo.records import LLMUsage
from operators import call_failures, prices as prices_lib
from operators.call_failures import Failure
from operators.prices import DEFAULT_PRICES
from operators.replay import MATCHES, Position, Recording, ReplayMissError

__all__ = ["LLMClient", "LLMReply", "BudgetExceeded", "EndpointUnusable", "ReplayMissError", "request_hash",
           "call_row", "DEFAULT_PRICES"]

MODES = ("llm", "replay")

PREFLIGHT_TIMEOUT_S = 30.0
"""Longest the preflight waits for each of its (at most three) requests."""

_DECISIVE = frozenset({"connection_refused", "dns_error", "tls_error", "connection_error", "timeout",
                       "unauthorized", "forbidden"})
"""Preflight failures that no other request could contradict."""


class BudgetExceeded(RuntimeError):
    """The budget refused a call before it was sent: the campaign should stop asking."""


class EndpointUnusable(RuntimeError):
    """The preflight found that the endpoint cannot serve the model; `failure` says why."""

    def __init__(self, failure: Failure):
        super().__init__(failure.line)
        self.failure = failure


class BudgetSeam(Protocol):
    """What the client needs of a budget (see `operators.budget.Budget`)."""

    def reserve(self, estimated_usd: float, estimated_tokens: int) -> bool: ...

    def settle(self, reserved_usd: float, reserved_tokens: int, actual_usd: float, actual_tokens: int) -> None: ...


@dataclasses.dataclass(frozen=True)
class LLMReply:
    """What one call returned. `success` False means `error` says why (`failure_kind`: the
    `call_failures` kind) and `text` may be empty; `recorded_from` is file:line for a reply
    read from a generations file (`operators.recorded_generations`)."""

    text: str
    usage: LLMUsage
    success: bool
    error: str = ""
    request_hash: str = ""
    attempts: int = 1
    replay_matched: str = ""
    failure_kind: str = ""
    recorded_from: str = ""


def request_hash(model: str, messages: Sequence[Mapping[str, str]], sampling: Mapping[str, Any],
                 sample_index: int) -> str:
    """Returns sha256 over model, messages, sampling parameters and sample index: a call's identity."""
    payload = json.dumps({"model": model, "messages": list(messages), "sampling": dict(sampling),
                          "sample_index": sample_index}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class LLMClient:
    """Chat Completions with retries, a concurrency limit, a budget, accounting and replay.

    Attributes:
      model, base_url: the model name (the price-table key) and the endpoint's root URL.
      api_key_env: the variable holding the key ("" for an endpoint that needs none).
      mode: "llm" (call the endpoint) or "replay" (answer from `recording`, by `replay_match`).
      temperature, max_tokens: default sampling temperature (GEAK samples at 1.0); completion
        cap per call, also the completion size a budget reserves.
      timeout_s, max_retries: limit on one HTTP attempt; further attempts on 429 / 5xx /
        timeout / connection error, `backoff_base_s` to `backoff_max_s` apart.
      max_concurrency: calls in flight at once from this client (per event loop).
      prices, budget: {model: (usd_per_1M_prompt, usd_per_1M_completion)}; an object with
        reserve/settle (`operators.budget.Budget`), or None for no cap.
      stream, seed: ask for server-sent events; seed the backoff jitter (tests' waits).
    """

    def __init__(self, *, model: str, base_url: str = "https://api.openai.com/v1",
                 api_key_env: str = "OPENAI_API_KEY", mode: str = "llm", temperature: float = 1.0,
                 max_tokens: int = 4096, timeout_s: float = 300.0, max_retries: int = 5,
                 backoff_base_s: float = 1.0, backoff_max_s: float = 60.0, max_concurrency: int = 8,
                 prices: Mapping[str, tuple[float, float]] | None = None, budget: BudgetSeam | None = None,
                 recording: Recording | str | os.PathLike | Sequence[Mapping] | None = None,
                 replay_match: str = "exact", stream: bool = False, seed: int = 0):
        if mode not in MODES:
            raise ValueError(f"LLMClient mode must be one of {MODES}, got {mode!r}")
        if replay_match not in MATCHES:
            raise ValueError(f"LLMClient replay_match must be one of {MATCHES}, got {replay_match!r}")
        if max_concurrency < 1 or max_retries < 0 or max_tokens < 1 or timeout_s <= 0:
            raise ValueError(f"bad LLMClient limits: max_concurrency={max_concurrency}, max_retries={max_retries}, "
                             f"max_tokens={max_tokens}, timeout_s={timeout_s}")
        if mode == "llm" and api_key_env and api_key_env not in os.environ:
            raise ValueError(f"the API key variable {api_key_env} is not set in the environment "
                             f"(set it, or set api_key_env = \"\" for an endpoint that needs no key)")
        if mode == "replay" and recording is None:
            raise ValueError("mode 'replay' needs a recording (a campaign folder, llm_calls/ or call rows)")
        self.model, self.base_url, self.api_key_env, self.mode = model, base_url, api_key_env, mode
        self.temperature, self.max_tokens, self.timeout_s = temperature, max_tokens, timeout_s
        self.max_retries, self.backoff_base_s, self.backoff_max_s = max_retries, backoff_base_s, backoff_max_s
        self.max_concurrency, self.stream, self.budget = max_concurrency, stream, budget
        self.prices = prices_lib.table(prices)
        self._recording = _as_recording(recording)
        self.replay_match = replay_match
        if mode == "replay" and replay_match == "position" and not self._recording.has_positions:
            raise ValueError(f"replay_match 'position' needs recorded rows with the columns task, island, "
                             f"generation and sample_index (a campaign's llm_calls/); "
                             f"{self._recording.source} lacks them")
        self._rng = random.Random(seed)
        self._calls: list[dict] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sdk: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return (f"LLMClient(mode={self.mode!r}, model={self.model!r}, base_url={self.base_url!r}, "
                f"api_key_env={self.api_key_env!r})")

    def __getstate__(self) -> dict:
        """Drops the SDK object (it holds the key) and the loop-bound state before pickling."""
        state = dict(self.__dict__)
        state.update(_loop=None, _sdk=None, _semaphore=None)
        return state

    async def aclose(self) -> None:
        """Closes the HTTP connections of the running loop's SDK client (call before the loop ends)."""
        if self._sdk is not None and self._loop is asyncio.get_running_loop():
            await self._sdk.close()
        self._loop = self._sdk = self._semaphore = None

    def drain_calls(self) -> list[dict]:
        """Returns the call-log rows since the last drain and forgets them (the engine writes them)."""
        calls, self._calls = self._calls, []
        return calls

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Returns the price of a call from the table (0 for a model missing from it)."""
        usd_in, usd_out = self.prices.get(self.model, (0.0, 0.0))
        return (prompt_tokens * usd_in + completion_tokens * usd_out) / 1e6

    async def complete(self, role: str, messages: Sequence[Mapping[str, str]], sample_index: int = 0,
                       temperature: float | None = None, position: Position | None = None) -> LLMReply:
        """Returns the endpoint's (or the recording's) answer to `messages`; see the module docstring.

        `position` (where in the campaign the call is made) is needed by replay's "position" policy.
        """
        _check_messages(messages)
        if self.mode == "replay" and self.replay_match == "position" and position is None:
            raise ValueError(f"replay_match 'position' needs the position of the {role} call")
        sampling = {"temperature": self.temperature if temperature is None else temperature,
                    "max_tokens": self.max_tokens}
        key = request_hash(self.model, messages, sampling, sample_index)
        if self.mode == "replay":
            at = position if self.replay_match == "position" else None
            reply = await self._budgeted(role, key, messages, self._replay(key, role, sample_index, at))
        else:
            sdk, semaphore = self._loop_state()
            async with semaphore:  # reserve only once a slot is free: queued calls hold no budget
                reply = await self._budgeted(role, key, messages, self._call(sdk, messages, sampling, key))
        self._calls.append(call_row(role, sample_index, messages, reply))
        return reply

    async def _budgeted(self, role: str, key: str, messages, call) -> LLMReply:
        """Awaits `call` (a coroutine) inside a budget reservation; raises BudgetExceeded if refused."""
        if self.budget is None:
            return await call
        estimated_tokens = _estimate_tokens(messages) + self.max_tokens
        estimated_usd = self.cost_usd(estimated_tokens - self.max_tokens, self.max_tokens)
        if not self.budget.reserve(estimated_usd, estimated_tokens):
            call.close()
            raise BudgetExceeded(f"budget refused the {role} call {key[:12]} "
                                 f"(estimated ${estimated_usd:.4f}, {estimated_tokens} tokens): {self.budget!r}")
        reply = None
        try:
            reply = await call
            return reply
        finally:
            usage = reply.usage if reply else LLMUsage()
            self.budget.settle(estimated_usd, estimated_tokens, usage.cost_usd,
                               usage.prompt_tokens + usage.completion_tokens)

    async def _replay(self, key: str, role: str, sample_index: int, position: Position | None) -> LLMReply:
        row, matched = self._recording.take(key, role, sample_index, position)
        return dataclasses.replace(_reply_from_row(row, key), replay_matched=matched)

    async def _call(self, sdk: openai.AsyncOpenAI, messages, sampling: dict, key: str) -> LLMReply:
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                text, usage = await self._request(sdk, messages, sampling)
                break
            except Exception as exc:  # noqa: BLE001 - every way a request fails is a failed reply
                failure, retryable, server_wait_s = self._failure(exc)
                if not retryable or attempt == self.max_retries:
                    return self._failed(failure, key, started, attempt + 1)
            await asyncio.sleep(call_failures.backoff_s(attempt, self.backoff_base_s, self.backoff_max_s,
                                                        self._rng, server_wait_s))
            attempt += 1
        latency_s = time.monotonic() - started
        prompt_tokens, completion_tokens = usage or (_estimate_tokens(messages), _estimate_text_tokens(text))
        usage_record = LLMUsage(model=self.model, prompt_tokens=prompt_tokens,
                                completion_tokens=completion_tokens, latency_s=latency_s,
                                cost_usd=self.cost_usd(prompt_tokens, completion_tokens), request_hash=key)
        if not text.strip():
            return LLMReply("", usage_record, False, f"empty response from {self.base_url}", key, attempt + 1,
                            failure_kind="empty_response")
        return LLMReply(text, usage_record, True, "", key, attempt + 1)

    def _failure(self, exc: Exception) -> tuple[Failure, bool, float | None]:
        """Returns what a failed request means: the Failure, whether to retry, the server's wait."""
        if isinstance(exc, openai.APIStatusError):
            failure = call_failures.from_status(exc.status_code, _server_message(exc), self.base_url,
                                                self.model, self.api_key_env)
            return (failure, call_failures.is_retryable_status(exc.status_code),
                    call_failures.retry_after_s(exc.response.headers))
        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            timed_out = isinstance(exc, openai.APITimeoutError)
            return call_failures.from_connection(exc, self.base_url, self.timeout_s, timed_out), True, None
        line = f"malformed response from {self.base_url}: {type(exc).__name__}: {exc}"
        return Failure("malformed_response", line), False, None

    async def preflight(self) -> None:
        """Raises EndpointUnusable unless the endpoint answers requests for `model`.

        The cheapest request that can decide comes first, so most endpoints are checked for free:
          1. GET models/{model} (`models.retrieve`), which OpenAI, Ollama and LiteLLM answer;
          2. unless that said yes, GET models (`models.list`): vLLM, SGLang and llama.cpp serve
             only the list, and the model being in it is enough;
          3. else a chat completion of one token, the one request every OpenAI-compatible server
             answers (a few prompt tokens), and the only proof that a model missing from the
             list (a proxy's wildcard route) is served; a 429 there passes (up, key taken).
        A connection, DNS or TLS error, a timeout, a 401 or a 403 decides at once. Nothing is
        retried: the check looks for a misconfiguration, which a retry does not fix.
        """
        sdk, _ = self._loop_state()
        served: list[str] = []
        try:
            await sdk.models.retrieve(self.model, timeout=PREFLIGHT_TIMEOUT_S)
            return
        except Exception as exc:  # noqa: BLE001 - classified; only a decisive failure stops here
            self._raise_if_decisive(exc)
        try:
            page = await sdk.models.list(timeout=PREFLIGHT_TIMEOUT_S)
            served = sorted(str(model.id) for model in page.data)
            if self.model in served:
                return
        except Exception as exc:  # noqa: BLE001 - as above
            self._raise_if_decisive(exc)
        try:
            await sdk.chat.completions.create(model=self.model, max_tokens=1, timeout=PREFLIGHT_TIMEOUT_S,
                                              messages=[{"role": "user", "content": "Answer OK."}])
        except Exception as exc:  # noqa: BLE001 - the last word
            failure, _, _ = self._failure(exc)
            if failure.kind == "rate_limited":
                return
            if failure.kind == "not_found" and served:
                shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
                failure = Failure(failure.kind, f"{self.base_url} does not serve model {self.model!r} "
                                                f"(it serves: {shown})")
            raise EndpointUnusable(failure) from None

    def _raise_if_decisive(self, exc: Exception) -> None:
        failure, _, _ = self._failure(exc)
        if failure.kind in _DECISIVE:
            raise EndpointUnusable(failure) from None

    async def _request(self, sdk: openai.AsyncOpenAI, messages, sampling: dict) -> tuple[str, tuple | None]:
        """One HTTP attempt. Returns (text, (prompt_tokens, completion_tokens) or None)."""
        common = dict(model=self.model, messages=list(messages), timeout=self.timeout_s, **sampling)
        if not self.stream:
            completion = await sdk.chat.completions.create(**common)
            if not completion.choices:
                raise ValueError("the response has no choices")
            return completion.choices[0].message.content or "", _usage(completion.usage)
        pieces, usage = [], None
        chunks = await sdk.chat.completions.create(stream=True, stream_options={"include_usage": True}, **common)
        async for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            usage = _usage(chunk.usage) or usage
        return "".join(pieces), usage

    def _failed(self, failure: Failure, key: str, started: float, attempts: int) -> LLMReply:
        usage = LLMUsage(model=self.model, latency_s=time.monotonic() - started, request_hash=key)
        error = failure.line + (f" (after {attempts} attempts)" if attempts > 1 else "")
        return LLMReply("", usage, False, error, key, attempts, failure_kind=failure.kind)

    def _loop_state(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        """Returns the SDK client and semaphore of the running event loop (built on first use)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            api_key = os.environ.get(self.api_key_env, "") if self.api_key_env else "no-key"
            self._sdk = openai.AsyncOpenAI(base_url=self.base_url, api_key=api_key or "no-key",
                                           timeout=self.timeout_s, max_retries=0)
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._sdk, self._semaphore


def _as_recording(recording) -> Recording | None:
    if recording is None or isinstance(recording, Recording):
        return recording
    if isinstance(recording, (str, os.PathLike)):
        return Recording.load(recording)
    return Recording(recording)


def _check_messages(messages) -> None:
    if not messages or not all(isinstance(m, Mapping) and isinstance(m.get("role"), str)
                               and isinstance(m.get("content"), str) for m in messages):
        raise ValueError(f"messages must be a non-empty list of {{'role': str, 'content': str}}, got {messages!r:.200}")


def _server_message(exc: openai.APIStatusError) -> str:
    """Returns the server's own words from an error answer (its JSON `message`, else the SDK's)."""
    body = exc.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str) and body["message"]:
        return body["message"]
    return exc.message


def _usage(usage) -> tuple[int, int] | None:
    if usage is None:
        return None
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)


def _estimate_text_tokens(text: str) -> int:
    """Returns a rough token count (4 characters a token), used only when usage is missing."""
    return math.ceil(len(text) / 4)


def _estimate_tokens(messages) -> int:
    return sum(_estimate_text_tokens(m["content"]) + 4 for m in messages)


def _reply_from_row(row: Mapping, key: str) -> LLMReply:
    usage = LLMUsage(model=row.get("model") or "", prompt_tokens=int(row.get("prompt_tokens") or 0),
                     completion_tokens=int(row.get("completion_tokens") or 0),
                     latency_s=float(row.get("latency_s") or 0.0), cost_usd=float(row.get("cost_usd") or 0.0),
                     request_hash=key)
    success = bool(row["success"])
    return LLMReply(row.get("response") or "", usage, success, row.get("error") or "", key,
                    int(row.get("attempts") or 1),
                    failure_kind="" if success else row.get("failure_kind") or "unknown")


def call_row(role: str, sample_index: int, messages, reply: LLMReply) -> dict:
    """Returns the call-log row of one call (the columns of results/<campaign>/llm_calls/)."""
    usage = reply.usage
    return {"role": role, "model": usage.model, "request_hash": reply.request_hash, "sample_index": sample_index,
            "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "latency_s": usage.latency_s, "cost_usd": usage.cost_usd, "success": reply.success,
            "error": reply.error, "response": reply.text, "attempts": reply.attempts,
            "messages_json": json.dumps(list(messages), ensure_ascii=False),
            "replay_matched": reply.replay_matched or None, "failure_kind": reply.failure_kind or None,
            "recorded_from": reply.recorded_from or None,
            "finished_at": datetime.datetime.now(datetime.timezone.utc)}
