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
"""The shared page's 32-bit words, in order: the inputs are in place and the clock runs
(`go`); the worker's runs are over (`done`). Each batch writes a fresh value the checker drew
into both."""
TURN = ("turn",)
"""The word of a page the checker keeps to itself: its own stream writes each batch's value
there when it next gets the GPU after `done`, which is where the clock stops (a kernel the
worker leaves running after an early `done` holds the GPU until it ends or its time slice
does: `fitness.judge.timed_batch.TimedBatch.release`)."""
TAG = ":words"
"""Appended to a timed case's token: the label of its page's descriptor on the channels."""
_REGISTER_DEVICEMAP = 0x2  # CU_MEMHOSTREGISTER_DEVICEMAP


class HostWords:
    """A page of named words, mapped here: the shared one is made by `create` in the checker
    and `open`ed (registered with the driver, so a stream can reach it) in the worker; the
    checker's own `TURN` page is made and registered in the checker, and never exported."""

    def __init__(self, fd: int, names: tuple[str, ...] = WORDS):
        self.fd, self.names = fd, names
        self.page = mmap.mmap(fd, PAGE_BYTES)
        self.words = memoryview(self.page).cast("i")
        self.host = self.device = None

    @classmethod
    def create(cls, names: tuple[str, ...] = WORDS) -> "HostWords":
        """Makes the page, sealed at its size: the worker gets a writable descriptor, and a
        page it could shrink would kill the checker with SIGBUS at its next read."""
        fd = os.memfd_create("judge-words", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, PAGE_BYTES)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        return cls(fd, names)

    @classmethod
    def open(cls, fd: int) -> "HostWords":
        """Maps the shared page behind a received descriptor (kept; closed on release) and
        registers it."""
        return cls(fd).register()

    def register(self) -> "HostWords":
        """Registers the page with the driver in this process's context, so that a stream of
        this process can wait on and write its words; returns it."""
        import torch

        from fitness.processes.shared_memory import driver

        torch.zeros((), device="cuda")  # the driver registers host memory in a current context
        self.host = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(self.page)))
        driver()("cuMemHostRegister_v2", self.host, ctypes.c_size_t(PAGE_BYTES),
                 ctypes.c_uint(_REGISTER_DEVICEMAP))
        device = ctypes.c_ulonglong()
        driver()("cuMemHostGetDevicePointer_v2", ctypes.byref(device), self.host, ctypes.c_uint(0))
        self.device = device.value
        return self

    def export(self) -> int:
        """Returns a new descriptor of the page (the caller closes it)."""
        return os.dup(self.fd)

    def store(self, name: str, value: int) -> None:
        self.words[self.names.index(name)] = value

    def load(self, name: str) -> int:
        return self.words[self.names.index(name)]

    def address(self, name: str) -> int:
        """The device address of word `name` (a registered page only)."""
        return self.device + 4 * self.names.index(name)

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
