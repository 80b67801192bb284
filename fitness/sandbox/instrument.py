"""The worker's eyes: what a candidate did during a call, seen from inside its process.

Installed by the worker before any candidate is imported: a Triton launch counter, a torch
dispatch recorder that also poisons fresh allocations (a kernel that leaves outputs unwritten
fails), a thread-start watch (work moved to a thread escapes the recorder), a snapshot of the harness functions a candidate might
patch, and a watch that ends the process when the candidate's own code spins. The counter,
recorder and poison are the same in every call the candidate sees (checked, warm-up,
captured, timed), and a callable launch grid runs outside the launch, where they see it.
These observations are reported; the verdicts are made by the parent
(`fitness.judge.anticheat`), whose code the candidate cannot reach.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import os
import random
import sys
import threading
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from fitness.measure.launches import LaunchCounter
from fitness.processes import protocol

class Stall:
    """Decides from samples of the main thread whether a candidate's own code is stuck.

    Stuck means: every sample for `stall_s` seconds found the candidate's own Python code
    innermost, outside any Triton launch, and no launch happened in between. Compiling,
    launching, torch's Python layers and the harness all reset the streak, so only a host
    loop of the candidate's own (`while True: pass`, a sleep, a huge Python computation)
    can be stuck: a kernel task's call never needs seconds of that.
    """

    def __init__(self, stall_s: float):
        self.stall_s = stall_s
        self._since: float | None = None
        self._launches = -1

    def observe(self, now: float, own_code: bool, launches: int) -> bool:
        """Takes one sample; returns whether the streak of own-code samples is now stuck."""
        if own_code and launches == self._launches and self._since is not None:
            return now - self._since >= self.stall_s
        self._since = now if own_code else None
        self._launches = launches
        return False


class StallWatch:
    """Ends the process (status `protocol.STALL_EXIT`) when the candidate's own code is stuck.

    Why: a stage limit cannot tell a host loop from a long compilation by time alone, so a
    `while True` in the entry point held its worker for the whole limit (minutes for a
    first call). The watch is a daemon thread that samples the main thread's innermost
    frame while armed (`watching`, around import and correctness calls); disarmed, it
    sleeps until armed again, so timing is left undisturbed. It lives in the untrusted
    process, so a candidate can disarm it; that only gives the candidate back the stage
    limit, and ending early only fails itself.
    """

    def __init__(self, launches: LaunchCounter, interval_s: float = 0.1):
        self.launches = launches
        self.interval_s = interval_s
        self._main = threading.get_ident()
        self._armed: tuple[str, Stall] | None = None
        self._wake = threading.Event()  # set while armed

    def install(self) -> None:
        threading.Thread(target=self._watch, name="stall-watch", daemon=True).start()

    @contextlib.contextmanager
    def watching(self, module_path: str, stall_s: float | None):
        """Arms the watch for code in `module_path` (no watch when `stall_s` is None)."""
        if stall_s:
            self._armed = (module_path, Stall(stall_s))
            self._wake.set()
        try:
            yield
        finally:
            self._armed = None
            self._wake.clear()

    def _watch(self) -> None:
        sleep, clock, frames = time.sleep, time.monotonic, sys._current_frames
        while True:
            self._wake.wait()
            sleep(self.interval_s)
            armed = self._armed
            if armed is None:
                continue
            module_path, stall = armed
            frame = frames().get(self._main)
            own_code = (frame is not None and frame.f_code.co_filename == module_path
                        and not self.launches.depth)
            if stall.observe(clock(), own_code, self.launches.count):
                os._exit(protocol.STALL_EXIT)  # at once: the main thread must not reply in between


_TRITONS_OWN = frozenset({"set_", "empty", "new_empty", "empty_strided", "copy_", "zero_",
                          "clone", "_to_copy", "detach", "view", "as_strided", "alias"})
"""Ops a launch makes itself (the interpreter's argument copies, an autotuner's resets): not
recorded inside a launch. Anything else there is a launch hook's or a constexpr object's."""


def _elements(values) -> tuple[int, int]:
    """Returns (the most elements of any tensor among `values`, how many tensors)."""
    sizes = [v.numel() for v in tree_leaves(values) if isinstance(v, torch.Tensor)]
    return max(sizes, default=0), len(sizes)


class OpRecorder(TorchDispatchMode):
    """Records the aten ops a candidate calls, how much data each touched, and poisons its
    fresh allocations.

    Every call the candidate sees is made under one (checked, warm-up, captured, timed), so
    the poison is no sign of being watched: a kernel that reads its own output or a probe to
    tell a checked call from a timed one sees the same in both. The poison is drawn per
    allocation (`poison_value`), so a kernel that does the full work only when it sees one
    poison value leaves the other unwritten and fails. `defer`: record the allocations
    instead of filling them (a CUDA graph capture, whose fills would be captured into the
    timed replay); the caller fills them before every replay (`poison`).

    Ops inside a launch count too (a hook's), bar the launch's own (`_TRITONS_OWN`). `work`:
    per op, the elements it touched and its single-value calls (`anticheat.torch_share`)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps __torch_dispatch__ to skip dynamo, importing torch._dynamo (and sympy)
        # on the first op: seconds per worker start. Nothing here runs under dynamo.
        return False

    def __init__(self, launches: LaunchCounter, poison: bool = True, defer: bool = False):
        super().__init__()
        self.launches = launches
        self.poison = poison
        self.defer = defer
        self.ops: set[str] = set()
        self.work: dict[str, list[int]] = {}  # op -> [elements touched, single-value calls]
        self.fresh: list[torch.Tensor] = []  # allocations left unfilled (`defer`)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if self.launches.depth and name in _TRITONS_OWN:
            return out
        name = name if func.namespace == "aten" else f"{func.namespace}::{name}"
        self.ops.add(name)
        largest, tensors = _elements((args, kwargs, out))
        work = self.work.setdefault(name, [0, 0])
        work[0] += largest
        work[1] += bool(tensors) and largest <= 1
        if self.launches.depth:
            return out
        if self.poison and name in protocol.ALLOCATORS and isinstance(out, torch.Tensor):
            if self.defer:
                self.fresh.append(out)
            else:
                poison(out)
        return out


_DRAW = random.SystemRandom()
_FLOAT_POISONS = (float("nan"), float("inf"), float("-inf"), float("inf"))


def poison_value(dtype: torch.dtype):
    """Returns a value no correct output holds where its reference is finite, drawn at
    random: NaN or an infinity for floating dtypes, the smallest or largest integer for
    integer ones (None for bool). The checker counts a non-finite output where the reference
    is finite as `nan`, so an unwritten output fails the same way whichever was drawn."""
    if dtype.is_floating_point or dtype.is_complex:
        return _DRAW.choice(_FLOAT_POISONS)
    if dtype == torch.bool:
        return None
    info = torch.iinfo(dtype)
    return _DRAW.choice((info.min, info.max))


def poison(tensor: torch.Tensor) -> None:
    """Fills `tensor` with a `poison_value` of its dtype. A tensor made under
    `torch.inference_mode()` (a captured call's, poisoned before each replay) can only be
    written in that mode."""
    value = poison_value(tensor.dtype)
    if not tensor.numel() or value is None:
        return
    if tensor.is_inference():
        with torch.inference_mode():
            tensor.fill_(value)
    else:
        tensor.fill_(value)


class ThreadWatch:
    """Counts threads started outside Triton launches (their torch ops escape the recorder)."""

    def __init__(self, launches: LaunchCounter):
        self.launches = launches
        self.started = 0

    def install(self) -> None:
        watch = self
        original_start = threading.Thread.start
        original_new_thread = _thread.start_new_thread

        def start(thread):
            if not watch.launches.depth:
                watch.started += 1
            return original_start(thread)

        def start_new_thread(function, args, kwargs=None):
            if not watch.launches.depth:
                watch.started += 1
            return original_new_thread(function, args, kwargs or {})

        threading.Thread.start = start
        _thread.start_new_thread = start_new_thread


class HostReadWatch:
    """Counts tensor-to-NumPy/list conversions outside launches (math done on the host)."""

    def __init__(self, launches: LaunchCounter):
        self.launches = launches
        self.count = 0

    def install(self) -> None:
        for name in ("numpy", "tolist", "__array__"):
            setattr(torch.Tensor, name, self._wrap(getattr(torch.Tensor, name)))

    def _wrap(self, method):
        watch = self

        @functools.wraps(method)
        def counted(tensor, *args, **kwargs):
            if not watch.launches.depth:
                watch.count += 1
            return method(tensor, *args, **kwargs)

        return counted


_TORCH_FUNCTIONS = ("allclose", "isclose", "equal", "save", "load", "empty", "empty_like",
                    "empty_strided", "zeros", "zeros_like", "ones", "full", "randn", "rand",
                    "from_numpy", "as_strided")
"""Top-level torch functions the harness uses or a candidate could forge results through."""


def _watched_namespaces() -> dict[str, dict]:
    from triton.runtime import autotuner, interpreter, jit

    classes = {"torch.Tensor": torch.Tensor, "torch.cuda.Event": torch.cuda.Event,
               "JITFunction": jit.JITFunction, "InterpretedFunction": interpreter.InterpretedFunction,
               "Autotuner": autotuner.Autotuner, "threading.Thread": threading.Thread}
    namespaces = {label: vars(cls) for label, cls in classes.items()}
    namespaces.update({"torch.testing": vars(torch.testing), "time": vars(time),
                       "torch": {name: getattr(torch, name) for name in _TORCH_FUNCTIONS},
                       "torch.cuda": {"synchronize": torch.cuda.synchronize,
                                      "Event": torch.cuda.Event}})
    return namespaces


class HarnessSnapshot:
    """Identities of the functions the harness relies on, to notice a candidate patching them."""

    def __init__(self):
        self._ids = {label: {attr: id(value) for attr, value in list(namespace.items())
                             if callable(value)}
                     for label, namespace in _watched_namespaces().items()}

    def changed(self) -> list[str]:
        """Returns the names whose object is no longer the one snapshotted."""
        changed = []
        for label, current in _watched_namespaces().items():
            for attr, ident in self._ids[label].items():
                if attr not in current or id(current[attr]) != ident:
                    changed.append(f"{label}.{attr}")
        return sorted(changed)
