"""Framing between the evaluator and its worker processes.

Requests (parent -> worker) are pickled: the parent is trusted and requests carry Tasks
whose callables pickle by reference. Replies (worker -> parent) are JSON, never pickle: a
worker runs untrusted code, and unpickling its bytes in the parent would let a candidate
run code in the engine. Tensors travel separately, as `torch.save` files that the checker
reads with `weights_only=True`.
"""

from __future__ import annotations

import json
import os
import pickle
import struct

_HEADER = struct.Struct("!I")
MAX_REPLY_BYTES = 8 << 20
"""A reply larger than this is a protocol violation (a flooding or forged reply)."""


class ProtocolError(RuntimeError):
    """The other side closed the pipe or sent a malformed frame."""


def _read_exact(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise ProtocolError("pipe closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def frame(payload: bytes) -> bytes:
    """Returns the payload with its length prefix."""
    return _HEADER.pack(len(payload)) + payload


def encode_request(request: dict) -> bytes:
    """Returns a framed request (the parent writes it with its own deadline)."""
    return frame(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))


def recv_request(fd: int) -> dict:
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return pickle.loads(_read_exact(fd, size))


def send_reply(fd: int, reply: dict) -> None:
    data = frame(json.dumps(reply, default=str).encode())
    while data:
        data = data[os.write(fd, data):]


class ReplyReader:
    """Reassembles JSON replies from non-blocking reads, so the parent can poll with a deadline."""

    def __init__(self, fd: int):
        self._fd = fd
        self._buffer = b""

    def feed(self) -> bool:
        """Reads what is available; returns False when the pipe is closed."""
        chunk = os.read(self._fd, 1 << 20)
        self._buffer += chunk
        return bool(chunk)

    def take(self) -> dict | None:
        """Returns the next complete reply, or None when more bytes are needed."""
        if len(self._buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack(self._buffer[:_HEADER.size])
        if size > MAX_REPLY_BYTES:
            raise ProtocolError(f"reply of {size} bytes exceeds {MAX_REPLY_BYTES}")
        end = _HEADER.size + size
        if len(self._buffer) < end:
            return None
        payload, self._buffer = self._buffer[_HEADER.size:end], self._buffer[end:]
        try:
            reply = json.loads(payload)
        except ValueError as error:
            raise ProtocolError(f"malformed reply: {error}") from None
        if not isinstance(reply, dict):
            raise ProtocolError(f"reply is a {type(reply).__name__}, not an object")
        return reply
