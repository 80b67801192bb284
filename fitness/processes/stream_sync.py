"""Stream memory operations: one process's stream waits for, or writes, a 32-bit word in a
device buffer both processes map (`fitness.processes.shared_memory`).

This is how the judge's clock is ordered against a worker's GPU work without trusting the
worker's events: the worker's stream is held until `go` (by `spin_until`, a one-thread
kernel reading the word, or `wait_value`, the GPU's front end blocking the stream without
running a kernel) and ends with `write(done)`; the checker's stream waits for `done` and
writes a word of its own (docs/design.md, "The timed batch (GPU)"). Bound through the driver
API (ctypes, as the shared buffers are): torch has no binding.
"""

from __future__ import annotations

import ctypes
import functools

from fitness.processes.shared_memory import driver

WAIT_EQ = 0x1
"""CU_STREAM_WAIT_VALUE_EQ: the stream waits until the word equals the value."""
_SPIN_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin_until(.param .u64 spin_word, .param .u32 spin_value)
{
  .reg .u64 %a;
  .reg .u32 %v, %seen;
  .reg .pred %p;
  ld.param.u64 %a, [spin_word];
  ld.param.u32 %v, [spin_value];
SPIN:
  ld.volatile.global.u32 %seen, [%a];
  setp.ne.u32 %p, %seen, %v;
  @%p bra SPIN;
  ret;
}
"""
"""A one-thread kernel that reads a word until it holds a value: volatile, so every read goes
to the word (a host page's, over the bus), never a cached copy. PTX for the oldest target
the driver still builds, built by it for the device at load."""


@functools.cache
def _entry(name: str):
    """Returns the driver's function `name`, the `_v2` flavour where the driver has it
    (CUDA 12 drops the attribute check the first versions needed)."""
    lib = driver().lib
    for symbol in (f"{name}_v2", name):
        if hasattr(lib, symbol):
            function = getattr(lib, symbol)
            function.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_uint32,
                                 ctypes.c_uint]
            function.restype = ctypes.c_int
            return symbol, function
    raise OSError(f"the CUDA driver has no {name}")


def _call(name: str, stream: int, address: int, value: int, flags: int) -> None:
    symbol, function = _entry(name)
    status = function(stream, address, value & 0xFFFFFFFF, flags)
    if status != 0:
        text = ctypes.c_char_p()
        driver().lib.cuGetErrorString(status, ctypes.byref(text))
        raise RuntimeError(f"{symbol} failed: CUDA error {status} "
                           f"({(text.value or b'?').decode()})")


def wait_value(stream: int, address: int, value: int) -> None:
    """Enqueues on `stream` (a driver stream handle, `torch.cuda.Stream.cuda_stream`) a wait
    until the 32-bit word at device `address` equals `value`."""
    _call("cuStreamWaitValue32", stream, address, value, WAIT_EQ)


@functools.cache
def _spin_kernel() -> ctypes.c_void_p:
    """Returns `_SPIN_PTX`'s kernel, loaded into the current context (once a process)."""
    module, kernel = ctypes.c_void_p(), ctypes.c_void_p()
    driver()("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(_SPIN_PTX))
    driver()("cuModuleGetFunction", ctypes.byref(kernel), module, b"spin_until")
    return kernel


def spin_until(stream: int, address: int, value: int) -> None:
    """Enqueues on `stream` a one-thread kernel that spins until the 32-bit word at device
    `address` equals `value`: where `wait_value` leaves the stream blocked in the GPU's front
    end, to be woken about 160 us after the word is stored (RESULTS.md#host-clock), a kernel
    already running sees it within microseconds, and the kernels behind it follow."""
    word, expected = ctypes.c_ulonglong(address), ctypes.c_uint32(value & 0xFFFFFFFF)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(word), ctypes.c_void_p),
                                   ctypes.cast(ctypes.byref(expected), ctypes.c_void_p))
    one = ctypes.c_uint(1)
    driver()("cuLaunchKernel", _spin_kernel(), one, one, one, one, one, one, ctypes.c_uint(0),
             ctypes.c_void_p(stream), params, None)


def write_value(stream: int, address: int, value: int) -> None:
    """Enqueues on `stream` a write of `value` to the 32-bit word at device `address`, after
    every earlier write of the stream is visible (the driver's default memory barrier)."""
    _call("cuStreamWriteValue32", stream, address, value, 0)
