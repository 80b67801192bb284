"""A page of host memory the checker and a worker both map: the words of the judge's clock on
a GPU (docs/design.md, "The timed batch (GPU)").

The checker stores `go` and reads `done` with its CPU, around its own clock; the worker's
stream waits on `go` and writes `done` through the driver (`cuMemHostRegister`, then the
stream memory operations of `fitness.processes.stream_sync` on the page's device address).
Host memory, not a device word: a wait for `done` pending in the checker's own context while
the worker's runs went cost about 130 us a batch in context switches (RESULTS.md#host-clock).
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os

PAGE_BYTES = 4096
WORDS = ("go", "done")
"""The page's 32-bit words, in order: the inputs are in place and the clock runs (`go`); the
worker's runs are over (`done`). Each batch writes a fresh value the checker drew into both."""
TAG = ":words"
"""Appended to a timed case's token: the label of its page's descriptor on the channels."""
_REGISTER_DEVICEMAP = 0x2  # CU_MEMHOSTREGISTER_DEVICEMAP


class HostWords:
    """The shared page, mapped here; `create` in the checker, `open` (registered with the
    driver, so a stream can reach it) in the worker."""

    def __init__(self, fd: int):
        self.fd = fd
        self.page = mmap.mmap(fd, PAGE_BYTES)
        self.words = memoryview(self.page).cast("i")
        self.host = self.device = None

    @classmethod
    def create(cls) -> "HostWords":
        """Makes the page, sealed at its size: the worker gets a writable descriptor, and a
        page it could shrink would kill the checker with SIGBUS at its next read."""
        fd = os.memfd_create("judge-words", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, PAGE_BYTES)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        return cls(fd)

    @classmethod
    def open(cls, fd: int) -> "HostWords":
        """Maps the page behind a received descriptor (kept; closed on release) and registers
        it with the driver in this process's context."""
        import torch

        from fitness.processes.shared_memory import driver

        words = cls(fd)
        torch.zeros((), device="cuda")  # the driver registers host memory in a current context
        words.host = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(words.page)))
        driver()("cuMemHostRegister_v2", words.host, ctypes.c_size_t(PAGE_BYTES),
                 ctypes.c_uint(_REGISTER_DEVICEMAP))
        device = ctypes.c_ulonglong()
        driver()("cuMemHostGetDevicePointer_v2", ctypes.byref(device), words.host, ctypes.c_uint(0))
        words.device = device.value
        return words

    def export(self) -> int:
        """Returns a new descriptor of the page (the caller closes it)."""
        return os.dup(self.fd)

    def store(self, name: str, value: int) -> None:
        self.words[WORDS.index(name)] = value

    def load(self, name: str) -> int:
        return self.words[WORDS.index(name)]

    def address(self, name: str) -> int:
        """The device address of word `name` (a registered page only)."""
        return self.device + 4 * WORDS.index(name)

    def release(self) -> None:
        """Unregisters and unmaps the page; the worker synchronizes its streams first."""
        if self.page is None:
            return
        if self.device is not None:
            from fitness.processes.shared_memory import driver

            driver()("cuMemHostUnregister", self.host)
        self.words.release()
        self.page.close()
        os.close(self.fd)
        self.page = None
