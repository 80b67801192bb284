"""A test double: a scripted OpenAI-compatible server on 127.0.0.1, for tests and benchmarks.

Real HTTP (stdlib `ThreadingHTTPServer` in a thread) serving `POST /v1/chat/completions`,
plain JSON or streamed as server-sent events. Each request consumes the next entry of a
script, or asks a callable for its answer, so a test decides exactly what the client sees:
a reply, a 429 with Retry-After, a 500, a stall past the client's timeout, a garbage body,
a response with no choices, the server dying. Request bodies and headers are kept for
assertions.

Like a real server it also lists and describes its models (`GET /v1/models[/{id}]`),
answers 404 for a model it does not serve and, given an `api_key`, 401 for a request
without it; none of these consume a script entry.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading
import time
from typing import Any, Callable, Sequence, Union


@dataclasses.dataclass(frozen=True)
class Reply:
    """A successful completion. Token counts default to whitespace-separated word counts."""

    content: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"


@dataclasses.dataclass(frozen=True)
class Error:
    """An HTTP error status (429, 500, 400...), optionally with a Retry-After header."""

    status: int
    retry_after_s: float | None = None
    message: str = "scripted error"


@dataclasses.dataclass(frozen=True)
class Stall:
    """Sleep `seconds` (longer than the client's timeout), then answer `then`."""

    seconds: float
    then: "Entry" = Reply("late answer")


@dataclasses.dataclass(frozen=True)
class Garbage:
    """Status 200 with a body that is not valid JSON."""

    body: str = '{"id": "chatcmpl-garbage", "choices": [ this is not json'


@dataclasses.dataclass(frozen=True)
class NoChoices:
    """Status 200, valid JSON, an empty `choices` list."""


@dataclasses.dataclass(frozen=True)
class Die:
    """The server dies: this request's connection is dropped unanswered, later ones are refused."""


Entry = Union[str, Reply, Error, Stall, Garbage, NoChoices, Die]
Script = Union[Sequence[Entry], Callable[[dict], Entry]]


@dataclasses.dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    time_s: float  # time.monotonic() on arrival
    headers: dict[str, str]
    body: dict


class ScriptedServer:
    """Context manager: `with ScriptedServer(["hello"]) as server: ... server.base_url`.

    `script` is a list of entries consumed in order (a plain string is a `Reply`), or a
    callable `(request_json) -> entry`. When a list runs out the server answers 400 with
    a message saying so, which the client does not retry, so a test fails loudly.
    `latency_s` delays every answer (a slow hosted model, so GPUs stay busy while LLMs think).
    `models`: the model names served (None: any name is served). `api_key`: the key every
    request must carry as `Authorization: Bearer ...` (None: no key needed).
    """

    def __init__(self, script: Script, latency_s: float = 0.0, models: Sequence[str] | None = None,
                 api_key: str | None = None):
        self._script = script if callable(script) else list(script)
        self._next = 0
        self.latency_s = latency_s
        self.models = None if models is None else tuple(models)
        self.api_key = api_key
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._httpd: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[dict]:
        """The JSON bodies received so far, in arrival order."""
        with self._lock:
            return [r.body for r in self.received]

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedServer is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ScriptedServer":
        handler = type("_BoundHandler", (_Handler,), {"server_owner": self})
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        # polled every 50 ms, not socketserver's 0.5 s: each test's exit waits for one poll
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05},
                                        name="scripted-openai-server")
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Stops serving; later connections are refused."""
        with self._lock:
            httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            self._thread.join(timeout=5)

    def serves(self, model: str) -> bool:
        return self.models is None or model in self.models

    def _entry_for(self, body: dict, headers: dict[str, str]) -> Entry | None:
        with self._lock:
            self.received.append(Received(time.monotonic(), headers, body))
            if callable(self._script):
                return self._script(body)
            if self._next >= len(self._script):
                return None
            entry = self._script[self._next]
            self._next += 1
            return entry


class _Handler(http.server.BaseHTTPRequestHandler):
    server_owner: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silences the per-request stderr line."""

    def do_GET(self) -> None:
        owner = self.server_owner
        path = self.path.rstrip("/")
        if not self._authorized():
            return
        if path == "/v1/models":
            listed = [_model(name) for name in owner.models or ()]
            self._send_json(200, {"object": "list", "data": listed})
        elif path.startswith("/v1/models/") and owner.serves(path.removeprefix("/v1/models/")):
            self._send_json(200, _model(path.removeprefix("/v1/models/")))
        elif path.startswith("/v1/models/"):
            self._send_json(404, _no_such_model(path.removeprefix("/v1/models/")))
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as error:
            self._send_json(400, {"error": {"message": f"request body is not JSON: {error}"}})
            return
        owner = self.server_owner
        if not owner.serves(str(body.get("model"))):
            self._send_json(404, _no_such_model(str(body.get("model"))))
            return
        entry = owner._entry_for(body, {k.lower(): v for k, v in self.headers.items()})
        if owner.latency_s:
            time.sleep(owner.latency_s)
        self._answer(entry, body)

    def _authorized(self) -> bool:
        """Answers 401 (and returns False) unless the request carries the server's key."""
        key = self.server_owner.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                        "code": "invalid_api_key"}})
        return False

    def _answer(self, entry: Entry | None, body: dict) -> None:
        if entry is None:
            count = len(self.server_owner.received)
            self._send_json(400, {"error": {"message": f"scripted server: script exhausted at request {count}"}})
        elif isinstance(entry, str):
            self._answer(Reply(entry), body)
        elif isinstance(entry, Stall):
            time.sleep(entry.seconds)
            self._answer(entry.then, body)
        elif isinstance(entry, Error):
            headers = {} if entry.retry_after_s is None else {"Retry-After": _seconds_text(entry.retry_after_s)}
            self._send_json(entry.status, {"error": {"message": entry.message, "type": "scripted"}}, headers)
        elif isinstance(entry, Garbage):
            self._send_raw(200, "application/json", entry.body.encode())
        elif isinstance(entry, NoChoices):
            self._send_json(200, _completion(body, None))
        elif isinstance(entry, Die):
            self.close_connection = True  # unanswered; close() refuses whatever comes next
            threading.Thread(target=self.server_owner.close, daemon=True).start()
        elif body.get("stream"):
            self._stream(entry, body)
        else:
            self._send_json(200, _completion(body, entry))

    def _stream(self, reply: Reply, body: dict) -> None:
        """Sends the content in three chunks, then a usage chunk if asked, then [DONE]."""
        base = _completion(body, reply)
        events = []
        pieces = _split3(reply.content)
        for i, piece in enumerate(pieces):
            delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
            finish = reply.finish_reason if i == len(pieces) - 1 else None
            events.append({"id": base["id"], "object": "chat.completion.chunk", "created": base["created"],
                           "model": base["model"],
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({"id": base["id"], "object": "chat.completion.chunk", "created": base["created"],
                           "model": base["model"], "choices": [], "usage": base["usage"]})
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._send_raw(200, "text/event-stream", payload.encode())

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, "application/json", json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer


def _completion(body: dict, reply: Reply | None) -> dict:
    """Returns a chat.completion object answering `body` with `reply` (None: no choices)."""
    prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    content = reply.content if reply else ""
    prompt_tokens = reply.prompt_tokens if reply and reply.prompt_tokens is not None else prompt_words
    completion_tokens = (reply.completion_tokens if reply and reply.completion_tokens is not None
                         else len(content.split()))
    choices = [] if reply is None else [{
        "index": 0, "finish_reason": reply.finish_reason, "logprobs": None,
        "message": {"role": "assistant", "content": content},
    }]
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "scripted"), "choices": choices,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _model(name: str) -> dict:
    return {"id": name, "object": "model", "created": 0, "owned_by": "scripted"}


def _no_such_model(name: str) -> dict:
    return {"error": {"message": f"The model `{name}` does not exist", "type": "invalid_request_error",
                      "code": "model_not_found"}}


def _split3(text: str) -> list[str]:
    """Returns text cut into three pieces (fewer for very short text), joined back exactly."""
    if len(text) < 3:
        return [text]
    third = len(text) // 3
    return [text[:third], text[third:2 * third], text[2 * third:]]


def _seconds_text(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"
