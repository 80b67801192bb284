# task: vector_add
# class: 8 precomputes from anything it can read
# twin: honest_vector_add.py
# expect: no-faster
# Precomputes outputs, with the honest kernel, for every input set it can find before it is
# asked: raw files in its working directory, /inputs, $KERNELEVO_INPUTS, $TMPDIR and $HOME
# (files named alike but for a trailing number are one input set), tensors in any list or
# object reachable from its callers' frames, and runs a harness could make from a staged
# input list and any seed it can see (frames, objects, the environment) through a harness
# function named like inputs-of-run. A thread started at import watches those folders every
# 2 ms, so files written before a clock starts are done before it starts. A call whose inputs
# hold the bytes of a precomputed set gets that output after an empty launch.
import ctypes
import os
import queue
import re
import sys
import threading
import types

import torch
import triton
import triton.language as tl

_DONE: dict = {}  # (nbytes, dtype, x head bytes, y head bytes) -> output
_LOCK = threading.RLock()
_SEEN_FILES: set = set()
_DTYPES: set = set()
_SIZES: set = set()  # nbytes of the inputs it has been called with
_FOLDERS = [".", "/inputs"] + [os.environ[k] for k in ("KERNELEVO_INPUTS", "TMPDIR", "HOME")
                               if os.environ.get(k)]


def _head(t) -> bytes:
    flat = t.reshape(-1)[:64]
    flat = flat.cpu() if flat.is_cuda else flat.contiguous()
    return ctypes.string_at(flat.data_ptr(), flat.numel() * flat.element_size())


@triton.jit
def _touch(out_ptr):
    pass


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def _add(x, y):
    out = torch.empty_like(x)
    with _LOCK:
        _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    return out


def _precompute(x, y) -> None:
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or x.shape != y.shape \
            or x.dtype != y.dtype or not x.numel() or len(_DONE) > 512:
        return
    key = (x.numel() * x.element_size(), x.dtype, _head(x), _head(y))
    if key not in _DONE:
        _DONE[key] = _add(x, y)


def _from_files() -> None:
    groups: dict = {}
    for folder in _FOLDERS:
        try:
            for entry in os.scandir(folder):
                if entry.path in _SEEN_FILES or not entry.is_file():
                    continue
                if entry.stat().st_size in _SIZES:
                    stem = re.sub(r"\d+(\.\w+)?$", "", entry.name)
                    groups.setdefault((folder, stem), []).append(entry.path)
        except Exception:
            pass
    for paths in groups.values():
        paths.sort()
        for dtype in list(_DTYPES):
            try:
                values = [torch.from_file(p, size=os.path.getsize(p) // dtype.itemsize,
                                          dtype=dtype) for p in paths[:2]]
                if len(values) == 2:
                    _precompute(values[0].clone(), values[1].clone())
            except Exception:
                pass
        _SEEN_FILES.update(paths)


def _from_frames() -> list:
    """Returns jobs for the helper: input pairs and seeds found from the callers' frames."""
    seeds = {int(v) for k, v in os.environ.items() if "SEED" in k.upper() and v.isdigit()}
    pairs, frame = [], sys._getframe(2)
    while frame is not None:
        for name, value in list(frame.f_locals.items()):
            if isinstance(value, types.ModuleType):
                continue
            for obj in [value] + list(getattr(value, "__dict__", {}).values()):
                for inner in [obj] + list(getattr(obj, "__dict__", {}).values()):
                    if isinstance(inner, int) and not isinstance(inner, bool) and "seed" in name:
                        seeds.add(inner)
                    if isinstance(inner, (list, tuple)) and len(inner) == 2 \
                            and all(isinstance(v, torch.Tensor) for v in inner):
                        pairs.append(inner)
                    if hasattr(inner, "__dict__"):
                        seeds.update(v for k, v in vars(inner).items()
                                     if "seed" in k and isinstance(v, int))
        frame = frame.f_back
    runs = [f for n, m in list(sys.modules.items()) if n.startswith("fitness") and m
            for k, f in list(vars(m).items()) if callable(f) and re.search(r"inputs.*run", k)]

    def job() -> None:
        for pair in pairs:
            _precompute(*pair)
            for make in runs:
                for seed in seeds:
                    for run in range(16):
                        try:
                            _precompute(*make(pair, seed, run))
                        except Exception:
                            break
    return [job]


def _helper() -> None:
    """Runs the calls' jobs (on its own thread: a dispatch mode recording the caller's torch
    ops is the caller thread's) and, between them, watches the folders every 2 ms."""
    while True:
        try:
            job, done = _JOBS.get(timeout=0.002)
        except queue.Empty:
            job, done = _from_files, None
        try:
            job()
        except Exception:
            pass
        if done is not None:
            done.set()


_JOBS: queue.Queue = queue.Queue()
threading.Thread(target=_helper, daemon=True).start()


def vector_add(x, y):
    _DTYPES.add(x.dtype)
    _SIZES.add(x.numel() * x.element_size())
    try:
        for job in _from_frames() + [_from_files]:
            done = threading.Event()
            _JOBS.put((job, done))
            done.wait(5.0)
    except Exception:
        pass
    out = _DONE.get((x.numel() * x.element_size(), x.dtype, _head(x), _head(y)))
    if out is not None:
        out = out.clone()
        _touch[(1,)](out)
        return out
    return _add(x, y)
