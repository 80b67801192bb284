"""Stream memory operations: one process's stream waits for, or writes, a 32-bit word in a
device buffer both processes map (`fitness.processes.shared_memory`).

This is how the judge's clock is ordered against a worker's GPU work without trusting the
worker's events: the checker records its own timing events on its own stream around
`write(go)` and `wait(done)`, and the worker's stream is held by `wait(go)` and ends with
`write(done)` (docs/design.md, "The timed batch (GPU)"). The front end of the GPU blocks a
waiting stream without running a kernel, so no SM spins and the other context runs meanwhile.
Bound through the driver API (ctypes, as the shared buffers are): torch has no binding.
"""

from __future__ import annotations

import ctypes
import functools

from fitness.processes.shared_memory import driver

WAIT_EQ = 0x1
"""CU_STREAM_WAIT_VALUE_EQ: the stream waits until the word equals the value."""


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


def write_value(stream: int, address: int, value: int) -> None:
    """Enqueues on `stream` a write of `value` to the 32-bit word at device `address`, after
    every earlier write of the stream is visible (the driver's default memory barrier)."""
    _call("cuStreamWriteValue32", stream, address, value, 0)
