"""The descriptor channel that lends shared GPU buffers to sandboxed workers.

The buffers themselves need a CUDA device (checked on the GPU by
experiments/perf/cheat_sweep.py and fitness_bench.py); what a CPU machine can check is the
part that decides which descriptor a worker maps: labels, leftovers and layout.
"""

from __future__ import annotations

import os
import socket

import pytest

from fitness import shared_memory


def _pipe_with(text: bytes) -> int:
    """Returns the read end of a pipe holding `text` (a descriptor that names its content)."""
    read_end, write_end = os.pipe()
    os.write(write_end, text)
    os.close(write_end)
    return read_end


def _sent(channel, text: bytes, tag: str) -> None:
    fd = _pipe_with(text)
    shared_memory.send_fd(channel, fd, tag)
    os.close(fd)


def test_a_descriptor_arrives_under_its_label_and_leftovers_are_skipped():
    engine, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with engine, worker:
        _sent(engine, b"stale inputs", "c3")  # a request that failed before its worker read it
        _sent(engine, b"fresh inputs", "c4")
        fd = shared_memory.receive_fd(worker, "c4", timeout_s=5)
        with os.fdopen(fd, "rb") as handle:
            assert handle.read() == b"fresh inputs"


def test_a_missing_descriptor_is_an_error_not_a_hang():
    engine, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with engine, worker:
        _sent(engine, b"other call", "c1")
        with pytest.raises(shared_memory.SharedMemoryError, match="c2"):
            shared_memory.receive_fd(worker, "c2", timeout_s=0.5)


def test_a_closed_channel_is_an_error():
    engine, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    engine.close()
    with worker, pytest.raises(shared_memory.SharedMemoryError):
        shared_memory.receive_fd(worker, "c1", timeout_s=5)


def test_regions_are_aligned_and_disjoint():
    offsets, total = shared_memory.layout([3, 0, 1024, 513])
    assert all(at % shared_memory.ALIGN_BYTES == 0 for at in offsets)
    ends = [at + max(n, 1) for at, n in zip(offsets, [3, 0, 1024, 513])]
    assert all(end <= following for end, following in zip(ends, offsets[1:]))
    assert ends[-1] <= total


def test_no_shared_buffers_without_a_cuda_device():
    assert not shared_memory.available("interpreter")
    assert not shared_memory.available("rocm")
