# task: vector_add
# class: 11 inflates the baseline's timing from beside it
# twin: honest_vector_add.py
# expect: baseline-not-inflated
# At import it forks one CPU burner per core (threads when it cannot fork) and, on a GPU,
# starts a thread that keeps long spin kernels queued on a stream of its own; then it waits
# 6 s inside its import (in threading's code, not its own), burning, while the judge times
# the task's baseline beside it. The burners stop at its first call (or when this process
# dies, or after 60 s), so its own timing runs on a quiet machine: a baseline timed slow
# beside it would make its honest kernel look several times faster than it is.
import os
import select
import threading
import time

import torch
import triton
import triton.language as tl

_stop_r, _stop_w = os.pipe()
_deadline = time.time() + 60
_stopping = threading.Event()


def _burn() -> None:
    parent, spins = os.getppid(), 0
    while time.time() < _deadline and os.getppid() == parent and not _stopping.is_set():
        for _ in range(20000):
            spins += 1
        if select.select([_stop_r], [], [], 0)[0]:
            break


def _spin_the_gpu() -> None:
    try:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            while not _stopping.is_set() and time.time() < _deadline:
                torch.cuda._sleep(50_000_000)
                stream.synchronize()
    except Exception:
        pass


def _start() -> None:
    for _ in range(min(os.cpu_count() or 2, 8)):
        try:
            if os.fork() == 0:
                try:
                    os.close(_stop_w)
                    _burn()
                finally:
                    os._exit(0)
        except OSError:
            threading.Thread(target=_burn, daemon=True).start()
    if torch.cuda.is_available():
        threading.Thread(target=_spin_the_gpu, daemon=True).start()
    threading.Event().wait(6.0)  # threading's frame innermost: not its own stuck code


def _stop() -> None:
    if not _stopping.is_set():
        _stopping.set()
        try:
            os.write(_stop_w, b"x")
            os.close(_stop_w)
        except OSError:
            pass
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


try:
    _start()
except Exception:
    pass


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    _stop()
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out
