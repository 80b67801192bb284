"""GPU buffers the trusted side owns, lent to a sandboxed worker as file descriptors.

Not files: four copies per tensor per call were most of a verdict's time (evidence:
RESULTS.md#shared-memory-not-files). Not CUDA IPC handles: the driver refuses them across PID
namespaces. Memory from `cuMemCreate` with a POSIX file-descriptor handle type crosses a Unix
socket (SCM_RIGHTS) as a descriptor, and the importer maps the same physical memory.

Safe, because the checker makes one `SharedBuffer` per call holding only the call's inputs and
one slot per expected output (references and pristine copies are never exported); the worker
copies outputs into the slots, refusing ones that do not fit; the checker copies them out
before judging (a later write changes nothing judged) and compares the inputs' region with the
pristine copy in place. Only CUDA has this (`available()`); elsewhere raw files carry them.
"""

from __future__ import annotations

import collections
import ctypes
import functools
import os
import socket
import weakref
from typing import Callable

from fitness.processes import protocol

ALIGN_BYTES = 512
"""Every tensor of a buffer starts at a multiple of this (vector loads, any dtype)."""

_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class SharedMemoryError(RuntimeError):
    """The driver refused a shared-memory operation; the message names which and why.
    `out_of_memory`: the device had no memory for it (CUDA_ERROR_OUT_OF_MEMORY)."""

    def __init__(self, message: str, out_of_memory: bool = False):
        super().__init__(message)
        self.out_of_memory = out_of_memory


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_CUDA_ERROR_OUT_OF_MEMORY = 2


class _Driver:
    """The few CUDA driver calls this module needs, bound through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(status, ctypes.byref(text))
            raise SharedMemoryError(f"{name} failed: CUDA error {status} "
                                    f"({(text.value or b'?').decode()})",
                                    out_of_memory=status == _CUDA_ERROR_OUT_OF_MEMORY)


@functools.cache
def driver() -> _Driver:
    """Returns the process's binding of the CUDA driver (`fitness.processes.stream_sync` uses it too)."""
    return _Driver()


def available(backend: str) -> bool:
    """Whether GPU buffers can be shared here: a CUDA device whose driver supports
    POSIX-descriptor handles for VMM allocations."""
    if backend != "cuda":
        return False
    try:
        import torch

        device = torch.cuda.current_device()
        value = ctypes.c_int()
        # CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103
        driver()("cuDeviceGetAttribute", ctypes.byref(value), 103, device)
        return bool(value.value)
    except (OSError, SharedMemoryError, RuntimeError, AssertionError):
        return False


def return_cached_memory(backend: str, above_bytes: int = 0) -> None:
    """Returns the blocks torch's caching allocator keeps in this process to the driver, when
    they come to more than `above_bytes`: every process of a pool shares one GPU, and each
    allocator would keep its largest walk's memory forever, leaving no room for a shared
    buffer (evidence: RESULTS.md#cached-memory). Called between candidates and, past a
    threshold (small tasks then pay no free and malloc per call), after a reference or a timing.
    """
    if backend in ("cuda", "rocm"):
        import torch

        if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > above_bytes:
            torch.cuda.empty_cache()


LARGE_CACHE_BYTES = 256 << 20
"""Cached memory past this is returned after a request that allocated it
(evidence: RESULTS.md#cached-memory)."""


def _prop(device: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type, prop.requestedHandleTypes = _PINNED, _POSIX_FD
    prop.location = _Location(_ON_DEVICE, device)
    return prop


def _rounded(nbytes: int, device: int) -> int:
    granularity = ctypes.c_size_t()
    driver()("cuMemGetAllocationGranularity", ctypes.byref(granularity),
              ctypes.byref(_prop(device)), 0)
    step = granularity.value
    return max(step, -(-nbytes // step) * step)


def layout(nbytes_each: list[int]) -> tuple[list[int], int]:
    """Returns (byte offset of each region, total bytes) with every region aligned."""
    offsets, end = [], 0
    for nbytes in nbytes_each:
        offsets.append(end)
        end += -(-max(nbytes, 1) // ALIGN_BYTES) * ALIGN_BYTES
    return offsets, end


class SharedBuffer:
    """One device allocation mapped into this process, exportable as a file descriptor.

    Made with `create` (the owner) or `open` (an importer, from a received descriptor).
    `release()` unmaps it here; the physical memory lives until every process that mapped
    it has released it.
    """

    def __init__(self, handle: int, pointer: int, size: int, device: int):
        self.handle, self.pointer, self.size, self.device = handle, pointer, size, device
        self._bytes = None

    @classmethod
    def create(cls, nbytes: int, device: int) -> "SharedBuffer":
        size = _rounded(nbytes, device)
        handle = ctypes.c_ulonglong()
        driver()("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size),
                  ctypes.byref(_prop(device)), ctypes.c_ulonglong(0))
        return cls._mapped(handle.value, size, device)

    @classmethod
    def open(cls, fd: int, nbytes: int, device: int) -> "SharedBuffer":
        """Maps the allocation behind a received descriptor; `nbytes` is what the sender
        said it holds (mapping more than the allocation holds fails in the driver)."""
        handle = ctypes.c_ulonglong()
        driver()("cuMemImportFromShareableHandle", ctypes.byref(handle),
                  ctypes.c_void_p(fd), _POSIX_FD)
        return cls._mapped(handle.value, _rounded(nbytes, device), device)

    @classmethod
    def _mapped(cls, handle: int, size: int, device: int) -> "SharedBuffer":
        cuda = driver()
        pointer = ctypes.c_ulonglong()
        cuda("cuMemAddressReserve", ctypes.byref(pointer), ctypes.c_size_t(size),
               ctypes.c_size_t(0), ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
        try:
            cuda("cuMemMap", ctypes.c_ulonglong(pointer.value), ctypes.c_size_t(size),
                   ctypes.c_size_t(0), ctypes.c_ulonglong(handle), ctypes.c_ulonglong(0))
        except SharedMemoryError:
            cuda("cuMemAddressFree", ctypes.c_ulonglong(pointer.value), ctypes.c_size_t(size))
            cuda("cuMemRelease", ctypes.c_ulonglong(handle))
            raise
        access = _AccessDesc(_Location(_ON_DEVICE, device), _READ_WRITE)
        cuda("cuMemSetAccess", ctypes.c_ulonglong(pointer.value), ctypes.c_size_t(size),
               ctypes.byref(access), ctypes.c_size_t(1))
        return cls(handle, pointer.value, size, device)

    def export(self) -> int:
        """Returns a new file descriptor for this allocation (the caller closes it)."""
        fd = ctypes.c_int(-1)
        driver()("cuMemExportToShareableHandle", ctypes.byref(fd),
                  ctypes.c_ulonglong(self.handle), _POSIX_FD, ctypes.c_ulonglong(0))
        return fd.value

    def bytes(self):
        """Returns the whole allocation as a uint8 torch tensor (a view, no copy)."""
        if self._bytes is None:
            import torch

            self._bytes = torch.as_tensor(_ArrayInterface(self.pointer, self.size),
                                          device=f"cuda:{self.device}")
        return self._bytes

    def view(self, at: int, dtype, shape, stride, offset: int):
        """Returns a strided view of `dtype` elements starting `at` bytes in (`strided_view`)."""
        return strided_view(self.bytes(), at, dtype, shape, stride, offset)

    def release(self) -> None:
        if self.pointer is None:
            return
        self._bytes = None
        cuda = driver()
        cuda("cuMemUnmap", ctypes.c_ulonglong(self.pointer), ctypes.c_size_t(self.size))
        cuda("cuMemAddressFree", ctypes.c_ulonglong(self.pointer), ctypes.c_size_t(self.size))
        cuda("cuMemRelease", ctypes.c_ulonglong(self.handle))
        self.pointer = None


class _ArrayInterface:
    """A raw device range in the `__cuda_array_interface__` form torch.as_tensor reads."""

    def __init__(self, pointer: int, size: int):
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1",
                                         "data": (pointer, False), "version": 2, "strides": None}


def send_fd(channel: socket.socket, fd: int, tag: str) -> None:
    """Sends one descriptor over a Unix datagram socket, labelled with `tag`."""
    socket.send_fds(channel, [tag.encode()], [fd])


_WAITING: "weakref.WeakKeyDictionary[socket.socket, collections.OrderedDict]" = weakref.WeakKeyDictionary()
"""Per channel, descriptors that arrived while another was awaited, by label: a walk may make
several buffers before it relays any, and relay them in another order (a case's judged-batch
slots before the re-check inputs made earlier)."""
_WAITING_MAX = 32
"""Descriptors kept waiting per channel at most; older ones (a request that failed half-way
never relays its own) are closed."""


def receive_fd(channel: socket.socket, tag: str, timeout_s: float) -> int:
    """Returns the descriptor labelled `tag`: one that arrived earlier while another was
    awaited, or the next to arrive with that label (others are kept waiting, `_WAITING`).
    Raises SharedMemoryError when none arrives in time."""
    waiting = _WAITING.setdefault(channel, collections.OrderedDict())
    if tag in waiting:
        return waiting.pop(tag)
    channel.settimeout(timeout_s)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 256, 4)
        except OSError as error:
            raise SharedMemoryError(f"no descriptor for {tag!r} arrived: {error}") from None
        if not message and not fds:
            raise SharedMemoryError(f"the channel closed before {tag!r} arrived")
        label = message.decode(errors="replace")
        if label == tag and len(fds) == 1:
            return fds[0]
        if len(fds) == 1 and label not in waiting:
            waiting[label] = fds[0]
            fds = []
        while len(waiting) > _WAITING_MAX:
            os.close(waiting.popitem(last=False)[1])
        for fd in fds:
            os.close(fd)


def _contiguous_stride(shape: list[int]) -> list[int]:
    stride, step = [], 1
    for size in reversed(shape):
        stride.append(step)
        step *= max(size, 1)
    return stride[::-1]


def allocator(device: int) -> Callable[[int], SharedBuffer]:
    """Returns allocate(nbytes) -> a new SharedBuffer on `device`. Out of memory, it hands
    what torch caches here back to the driver and tries once more."""
    def allocate(nbytes: int) -> SharedBuffer:
        try:
            return SharedBuffer.create(nbytes, device)
        except SharedMemoryError:
            return_cached_memory("cuda")
            return SharedBuffer.create(nbytes, device)

    return allocate


def pack(values, slot_bytes: list[int],
         allocate: Callable[[int], SharedBuffer]) -> tuple[SharedBuffer, dict]:
    """Trusted side: returns a new buffer holding each tensor of `values` (its storage span,
    so strided views keep their strides) followed by one empty slot per expected output,
    and its layout {"size", "values": specs, "slots": [{"at", "nbytes"}]}; anything else
    travels in the specs (`protocol.value_spec`)."""
    import torch

    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    spans = [protocol.extent(t.shape, t.stride(), t.storage_offset()) for t in tensors]
    offsets, total = layout([span * t.element_size() for span, t in zip(spans, tensors)]
                            + list(slot_bytes))
    buffer = allocate(total)
    specs, placed = [], iter(zip(tensors, spans, offsets))
    for value in values:
        if not isinstance(value, torch.Tensor):
            specs.append(protocol.value_spec(value))
            continue
        tensor, span, at = next(placed)
        if span:
            storage = torch.as_strided(tensor.detach(), (span,), (1,), 0)
            buffer.view(at, tensor.dtype, [span], [1], 0).copy_(storage)
        specs.append({"at": at, **protocol.tensor_spec(tensor)})
    if buffer.bytes().is_cuda:
        torch.cuda.current_stream().synchronize()  # the worker reads it from another process
    slots = [{"at": at, "nbytes": nbytes}
             for at, nbytes in zip(offsets[len(tensors):], slot_bytes)]
    return buffer, {"size": total, "values": specs, "slots": slots}


def strided_view(data, at: int, dtype, shape, stride, offset: int):
    """Returns a strided view of `dtype` elements starting `at` bytes into `data` (a whole
    uint8 tensor); raises SharedMemoryError if the view would reach outside it."""
    import torch

    span = protocol.extent(shape, stride, offset)
    end = at + span * dtype.itemsize
    if at < 0 or at % dtype.itemsize or end > data.numel():
        raise SharedMemoryError(f"a view of {span} {dtype} elements at byte {at} does not "
                                f"fit a buffer of {data.numel()} bytes")
    # as_strided counts its offset from the start of the storage, not of a slice
    return torch.as_strided(data.view(dtype), shape, stride, at // dtype.itemsize + offset)


def unpack(source, specs: list) -> list:
    """Returns the values `pack` described, tensors as views into `source`: a SharedBuffer,
    or a whole uint8 tensor laid out as one (the checker's private mirror of its lent sets)."""
    data = source.bytes() if isinstance(source, SharedBuffer) else source
    values = []
    for spec in specs:
        if not isinstance(spec, dict) or "at" not in spec:
            values.append(protocol.spec_value(spec) if isinstance(spec, dict) else None)
            continue
        dtype, shape, stride, offset = protocol.tensor_layout(spec)
        values.append(strided_view(data, spec["at"], dtype, shape, stride, offset))
    return values


def fill_slots(buffer: SharedBuffer, slots: list[dict], outputs: list) -> list[dict] | None:
    """Worker side: copies each output (contiguous) into its slot; returns their specs, or
    None when an output is not on the buffer's device or does not fit its slot (the caller then falls
    back to files, and the judge sees the wrong shape or dtype from the spec)."""
    if len(outputs) > len(slots):
        return None
    specs = []
    for index, (slot, value) in enumerate(zip(slots, outputs)):
        if (value.device != buffer.bytes().device
                or value.numel() * value.element_size() > slot["nbytes"]):
            return None
        shape = list(value.shape)
        stride = _contiguous_stride(shape)
        buffer.view(slot["at"], value.dtype, shape, stride, 0).copy_(value)
        specs.append({"slot": index, "dtype": str(value.dtype).removeprefix("torch."),
                      "shape": shape, "stride": stride, "offset": 0})
    return specs


def read_slot(buffer: SharedBuffer, slots: list[dict], spec: dict):
    """Trusted side: returns a private copy of the output a worker put in a slot; the spec
    comes from the candidate's process, so it must name a slot and stay inside it."""
    import torch

    index = spec.get("slot")
    if not isinstance(index, int) or not 0 <= index < len(slots):
        raise protocol.ProtocolError(f"output spec names no slot of {len(slots)}: {spec!r:.200}")
    dtype, shape, stride, offset = protocol.tensor_layout(spec)
    slot = slots[index]
    if protocol.extent(shape, stride, offset) * dtype.itemsize > slot["nbytes"]:
        raise protocol.ProtocolError(f"output {index} reaches outside its slot of "
                                     f"{slot['nbytes']} bytes")
    return torch.clone(buffer.view(slot["at"], dtype, shape, stride, offset))
