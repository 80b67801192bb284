"""The one seam between the trusted judge and the sandboxed side, and why it looks like this.

A sandboxed worker (`fitness.sandbox.worker`) runs candidates, so its replies are JSON
(unpickling its bytes would run its code in the engine), and so are its requests: it needs no
trusted object, only a source text, an entry point name and tensors the judge made. Requests
to a checker (`fitness.judge.checker`: trusted, never loads a candidate) are pickled, since a
Task's callables pickle by reference; every reply is JSON.

Tensors never travel through a pipe or a pickle: on a CUDA GPU they stay in a device buffer
the checker owns, lent as a file descriptor (`fitness.processes.shared_memory`); elsewhere they
are raw bytes in files. A small JSON spec validated by `tensor_layout` describes each: raw
bytes cannot run code, and a spec reaching outside its file or slot is refused.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
import struct

_HEADER = struct.Struct("!I")
MAX_REPLY_BYTES = 8 << 20
"""A reply larger than this is a protocol violation (a flooding or forged reply)."""
STALL_EXIT = 86
"""Exit status of a worker that ended itself because its candidate's own code was stuck
(`fitness.sandbox.instrument.StallWatch`); the pool reports a timeout."""

DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32",
          "int64", "bool")
"""The dtypes a tensor file may hold."""


class ProtocolError(RuntimeError):
    """The other side closed the pipe or sent a malformed frame or file."""


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


def encode_request(request: dict, pickled: bool = False) -> bytes:
    """Returns a framed request: JSON for a sandboxed worker, pickle for a trusted checker."""
    if pickled:
        return frame(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
    return frame(json.dumps(request).encode())


def recv_request(fd: int, pickled: bool = False) -> dict:
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    payload = _read_exact(fd, size)
    return pickle.loads(payload) if pickled else json.loads(payload)


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


ALLOCATORS = frozenset({"empty", "empty_like", "empty_strided", "new_empty",
                        "new_empty_strided", "empty_permuted"})
"""The aten ops that make a tensor of unset values: what the worker poisons, and what the
checker fills when it fences a reference (`fitness.judge.fenced`)."""
POISONED_MARKERS = ("illegal memory access", "misaligned address", "memory access fault",
                    "hsa_status_error", "unspecified launch failure", "illegal instruction")
"""Words of a device error that leaves the process's context unusable: every later device
call of the process fails with it."""


def poisons_context(error: BaseException) -> bool:
    """Whether `error` left this process's device context unusable (a sticky fault, or any
    CUDA/HIP error raised by torch): the process must end after its reply, or every later
    request it serves fails with the same error."""
    text = f"{type(error).__name__}: {error}".lower()
    return (any(marker in text for marker in POISONED_MARKERS) or "cuda error" in text
            or "hip error" in text or "acceleratorerror" in text.replace(" ", ""))


def serve(request_fd: int, reply_fd: int, start, on_error, pickled: bool = False) -> None:
    """Answers requests until the engine closes the pipe: the loop of workers and checkers.

    `start(init_request)` returns the handlers ({op: callable}) and the fields of the
    start-up reply (what this process can do); `on_error(error)` turns an exception into a
    reply. Every request gets exactly one reply. A reply marked "fatal"
    (the device context is poisoned) ends the process after it is sent.
    """
    init = recv_request(request_fd, pickled)
    try:
        handlers, abilities = start(init)
    except BaseException as error:
        send_reply(reply_fd, {**on_error(error), "kind": "harness_error"})
        return
    send_reply(reply_fd, {**abilities, "ok": True})
    while True:
        try:
            request = recv_request(request_fd, pickled)
        except ProtocolError:
            return  # the engine closed the pipe: shut down
        try:
            reply = handlers[request["op"]](request)
        except BaseException as error:  # a request always gets its answer, even on sys.exit
            reply = on_error(error)
        send_reply(reply_fd, reply)
        if reply.get("fatal"):
            os._exit(3)  # the engine sees the death and starts a fresh process


# --- tensors as raw files -----------------------------------------------------------------

def extent(shape, stride, offset: int) -> int:
    """Returns how many storage elements a strided view spans from element 0."""
    if any(size == 0 for size in shape):
        return 0
    return offset + sum((size - 1) * step for size, step in zip(shape, stride)) + 1


def tensor_spec(value) -> dict:
    """Returns a tensor's layout spec {"dtype", "shape", "stride", "offset"}: what a raw
    file's or a shared buffer's spec adds its place to, and all Triton specialises on."""
    return {"dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape),
            "stride": list(value.stride()), "offset": value.storage_offset()}


_SCALARS = (bool, int, float, str)


def crosses_as_value(value) -> bool:
    """Whether a non-tensor argument crosses the sandbox in its spec: None, a JSON scalar,
    or a tuple or list of them (a `normalized_shape`)."""
    if isinstance(value, (tuple, list)):
        return all(item is None or isinstance(item, _SCALARS) for item in value)
    return value is None or isinstance(value, _SCALARS)


def value_spec(value) -> dict:
    """Returns the spec a non-tensor argument crosses in: {"value": v}, a tuple marked so
    (JSON has lists only)."""
    return {"value": list(value), "tuple": True} if isinstance(value, tuple) else {"value": value}


def spec_value(spec: dict):
    """Returns the non-tensor argument `value_spec` described."""
    value = spec.get("value")
    return tuple(value) if spec.get("tuple") and isinstance(value, list) else value


def layouts(values) -> list[dict]:
    """Returns one spec per value: a tensor's `tensor_spec`, anything else's `value_spec`."""
    import torch

    return [tensor_spec(v) if isinstance(v, torch.Tensor) else value_spec(v) for v in values]


def write_values(directory: str, prefix: str, values) -> list[dict]:
    """Writes each tensor of `values` as `<prefix>-<i>.bin`; returns one JSON spec per value.

    A tensor's spec is {"file", "dtype", "shape", "stride", "offset"} (its storage span, so
    strided views keep their strides); anything else must cross as a value (`value_spec`).
    """
    import torch

    specs = []
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            if not crosses_as_value(value):
                raise TypeError(f"argument {index} is a {type(value).__name__}; only tensors "
                                "and JSON scalars (or tuples of them) cross the sandbox boundary")
            specs.append(value_spec(value))
            continue
        name = f"{prefix}-{index}.bin"
        span = extent(value.shape, value.stride(), value.storage_offset())
        base = torch.as_strided(value.detach(), (span,), (1,), 0).cpu().contiguous()
        with open(os.path.join(directory, name), "wb") as handle:
            handle.write(memoryview(base.view(torch.uint8).numpy()))
        specs.append({"file": name, **tensor_spec(value)})
    return specs


def read_values(directory: str, specs: list, device: str, max_bytes: int = 16 << 30) -> list:
    """Returns the values `specs` describe, tensors on `device`.

    Used on both sides; on the trusted side the specs and files come from a candidate, so
    every field is validated and any inconsistency is a ProtocolError.
    """
    import torch

    if not isinstance(specs, list):
        raise ProtocolError(f"expected a list of value specs, got {type(specs).__name__}")
    values = []
    for spec in specs:
        if not isinstance(spec, dict):
            raise ProtocolError(f"malformed value spec {spec!r}")
        if "file" not in spec:
            values.append(spec_value(spec))
            continue
        name = spec["file"]
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            raise ProtocolError(f"malformed tensor spec {json.dumps(spec)[:200]}")
        dtype, shape, stride, offset = tensor_layout(spec)
        span = extent(shape, stride, offset)
        if span * dtype.itemsize > max_bytes:
            raise ProtocolError(f"{name}: {span * dtype.itemsize} bytes exceed {max_bytes}")
        base = torch.empty(span * dtype.itemsize, dtype=torch.uint8)
        _read_regular(os.path.join(directory, name), memoryview(base.numpy()))
        tensor = torch.as_strided(base.view(dtype), shape, stride, offset)
        values.append(tensor.to(device) if device != "cpu" else tensor)
    return values


def tensor_layout(spec: dict) -> tuple:
    """Returns (torch dtype, shape, stride, storage offset) of a tensor spec, every field
    validated (the spec may come from a candidate's process); raises ProtocolError."""
    import torch

    dtype_name, shape = spec.get("dtype"), spec.get("shape")
    stride, offset = spec.get("stride"), spec.get("offset", 0)
    if (dtype_name not in DTYPES or not _int_list(shape) or not _int_list(stride)
            or len(stride) != len(shape) or not isinstance(offset, int) or offset < 0):
        raise ProtocolError(f"malformed tensor spec {json.dumps(spec)[:200]}")
    return getattr(torch, dtype_name), shape, stride, offset


def _int_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and v >= 0 for v in value)


def _read_regular(path: str, into: memoryview) -> None:
    """Fills `into` from a regular file of exactly its size, refusing symlinks and devices."""
    expected_bytes = len(into)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise ProtocolError(f"cannot open {os.path.basename(path)}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ProtocolError(f"{os.path.basename(path)} is not a regular file")
        if info.st_size != expected_bytes:
            raise ProtocolError(f"{os.path.basename(path)} holds {info.st_size} bytes, its spec "
                                f"says {expected_bytes}")
        done = 0
        while done < expected_bytes:
            count = os.readv(fd, [into[done:]])
            if not count:
                raise ProtocolError(f"{os.path.basename(path)} shrank while being read")
            done += count
    finally:
        os.close(fd)
