"""The descriptor channel that lends shared GPU buffers to sandboxed workers.

The driver calls need a CUDA device (checked on the GPU by experiments/perf/cheat_sweep.py
and fitness_bench.py); a CPU machine checks everything around them: which descriptor a
worker maps, where each value and output slot lies in a buffer, and that a spec from the
worker cannot reach outside its slot (with a host-memory buffer of the same class).
"""

from __future__ import annotations

import os
import socket

import pytest
import torch

from fitness.processes import protocol
from fitness.processes import shared_memory


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


def test_a_descriptor_passed_over_for_another_is_there_when_its_turn_comes():
    # a walk makes its re-check inputs, then a judged batch's slots, and relays the slots first
    engine, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with engine, worker:
        _sent(engine, b"re-check inputs", "c5")
        _sent(engine, b"batch slots", "c6b")
        for tag, text in (("c6b", b"batch slots"), ("c5", b"re-check inputs")):
            with os.fdopen(shared_memory.receive_fd(worker, tag, timeout_s=5), "rb") as handle:
                assert handle.read() == text


def test_a_missing_descriptor_is_an_error_not_a_hang():
    engine, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with engine, worker:
        _sent(engine, b"other call", "c1")
        with pytest.raises(shared_memory.SharedMemoryError, match="c2"):
            shared_memory.receive_fd(worker, "c2", timeout_s=0.5)


@pytest.mark.slow
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


class HostBuffer(shared_memory.SharedBuffer):
    """A SharedBuffer in host memory: the same views, slots and bounds, no driver. What a
    CPU machine can run of the layout code a GPU uses."""

    def __init__(self, size: int):
        super().__init__(handle=0, pointer=0, size=size, device=0)
        self._bytes = torch.zeros(size, dtype=torch.uint8)

    def release(self) -> None:
        self.pointer = None


def _pack(values, slot_bytes=()):
    return shared_memory.pack(values, list(slot_bytes), HostBuffer)


def test_every_value_unpacks_to_itself_at_its_own_place():
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    b = torch.arange(10, dtype=torch.int64)[2:9:3]  # a strided view with a storage offset
    c = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    buffer, layout = _pack([a, 7, b, c], slot_bytes=[64])
    unpacked = shared_memory.unpack(buffer, layout["values"])
    assert unpacked[1] == 7
    for original, copy in zip([a, b, c], [unpacked[0], unpacked[2], unpacked[3]]):
        assert copy.dtype == original.dtype and copy.stride() == original.stride()
        assert torch.equal(copy, original)
    pointers = [t.data_ptr() for t in (unpacked[0], unpacked[2], unpacked[3])]
    assert len(set(pointers)) == 3  # three regions, not three views of the buffer's start
    unpacked[0].fill_(0)  # a write through one view changes no other value
    assert torch.equal(unpacked[2], b) and torch.equal(unpacked[3], c)


def test_a_tuple_of_sizes_unpacks_as_a_tuple_and_a_list_as_a_list():
    """A `normalized_shape` crosses in its spec (JSON has lists only): a tuple comes back a
    tuple, as the kernel module was called with."""
    buffer, layout = _pack([torch.ones(3), (3, 4), [1, 2], None])
    unpacked = shared_memory.unpack(buffer, layout["values"])
    assert unpacked[1:] == [(3, 4), [1, 2], None] and type(unpacked[1]) is tuple


def test_a_shared_buffer_the_driver_had_no_memory_for_is_out_of_memory():
    """The device is shared: a checker's buffer the driver had no memory for goes again alone
    (fast_ce_loss was a harness error beside 7 other walks), any other refusal stays the
    harness's."""
    from fitness.judge.checker import error_reply

    full = shared_memory.SharedMemoryError("cuMemCreate failed: CUDA error 2 (out of memory)",
                                           out_of_memory=True)
    refused = shared_memory.SharedMemoryError("cuMemMap failed: CUDA error 1 (invalid argument)")
    assert (error_reply(full)["kind"], error_reply(refused)["kind"]) == ("out_of_memory", "harness_error")


def test_outputs_go_into_their_slots_and_come_back_as_private_copies():
    x = torch.ones(4, 5)
    buffer, layout = _pack([x], slot_bytes=[4 * 5 * 4, 8])
    outputs = [torch.full((5, 4), 3.0).t(), torch.tensor([9], dtype=torch.int64)]  # non-contiguous first
    specs = shared_memory.fill_slots(buffer, layout["slots"], outputs)
    read = [shared_memory.read_slot(buffer, layout["slots"], spec) for spec in specs]
    assert torch.equal(read[0], outputs[0]) and torch.equal(read[1], outputs[1])
    assert torch.equal(shared_memory.unpack(buffer, layout["values"])[0], x)  # inputs untouched
    buffer.bytes().fill_(0)  # what the worker writes later changes nothing already read
    assert torch.equal(read[0], outputs[0])


def test_an_output_that_does_not_fit_its_slot_falls_back_to_files():
    buffer, layout = _pack([torch.ones(2)], slot_bytes=[16])
    assert shared_memory.fill_slots(buffer, layout["slots"], [torch.ones(5)]) is None
    assert shared_memory.fill_slots(buffer, layout["slots"], [torch.ones(1), torch.ones(1)]) is None


@pytest.mark.parametrize("forged", [
    {"slot": 1, "dtype": "float32", "shape": [2], "stride": [1], "offset": 0},  # no such slot
    {"slot": 0, "dtype": "float32", "shape": [5], "stride": [1], "offset": 0},  # past its slot
    {"slot": 0, "dtype": "float32", "shape": [2], "stride": [1], "offset": 3},  # offset past it
    {"slot": 0, "dtype": "float32", "shape": [2], "stride": [-1], "offset": 0},  # negative stride
    {"slot": "0", "dtype": "float32", "shape": [2], "stride": [1], "offset": 0},
    {"slot": 0, "dtype": "object", "shape": [2], "stride": [1], "offset": 0},
])
def test_a_forged_output_spec_is_refused(forged):
    buffer, layout = _pack([torch.ones(64)], slot_bytes=[16])
    with pytest.raises(protocol.ProtocolError):
        shared_memory.read_slot(buffer, layout["slots"], forged)


def test_a_view_reaching_outside_the_buffer_is_refused():
    buffer = HostBuffer(64)
    with pytest.raises(shared_memory.SharedMemoryError):
        buffer.view(60, torch.float32, [2], [1], 0)
    with pytest.raises(shared_memory.SharedMemoryError):
        buffer.view(2, torch.float32, [1], [1], 0)  # misaligned for its dtype
