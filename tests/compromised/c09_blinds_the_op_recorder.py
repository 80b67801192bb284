# task: vector_add
# class: 9 blinds the op recorder
# twin: torch_vector_add.py
# expect: no-faster
# Before every call it takes down what could watch its torch ops: profile and trace hooks
# (sys, threading), every TorchDispatchMode subclass defined outside torch made a pass-
# through, the dispatch modes active around the call popped (`_disable_current_modes`), and
# the op sets of any recorder-like object its callers hold cleared of what it did.
# Then torch does the whole add; an empty Triton launch keeps a launch count honest. Its
# twin does the same openly, on a copy of the task that allows torch's add: the op audit is
# best effort, so a blinded audit must still leave a verdict measured on what really ran.
import contextlib
import sys
import threading

import torch
import triton


def _passthrough(self, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _blind() -> None:
    for hooks in (sys, threading):
        for name in ("setprofile", "settrace"):
            try:
                getattr(hooks, name)(None)
            except Exception:
                pass
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
        for cls in _subclasses(TorchDispatchMode):
            if not cls.__module__.startswith("torch"):
                cls.__torch_dispatch__ = _passthrough
    except Exception:
        pass


def _forget(names) -> None:
    """Clears `names` from every recorder-like object its callers hold (an `ops` set and a
    `work` dict, in a frame's locals or one attribute away)."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            for obj in [value] + list(getattr(value, "__dict__", {}).values()):
                try:
                    if isinstance(getattr(obj, "ops", None), set) and isinstance(getattr(obj, "work", None), dict):
                        obj.ops.difference_update(names)
                        for name in names:
                            obj.work.pop(name, None)
                except Exception:
                    pass
        frame = frame.f_back


def _unwatched():
    try:
        from torch.utils._python_dispatch import _disable_current_modes
        return _disable_current_modes()
    except Exception:
        return contextlib.nullcontext()


@triton.jit
def _touch(out_ptr):
    pass


def vector_add(x, y):
    _blind()
    with _unwatched():
        out = torch.add(x, y)
    _forget({"add"})
    _touch[(1,)](out)
    return out
