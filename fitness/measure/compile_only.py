"""Compiling a callable's Triton kernels for given input layouts without touching the device:
launches become compilations (`LaunchCounter.compiling_only`) on uninitialised stand-ins of
the inputs, side by side, and what compiled is readied for launch. A worker does it before a
candidate's first call, a checker before a baseline is staged: both run while another
candidate is timed, so neither may run a kernel or fill memory.
"""

from __future__ import annotations

import concurrent.futures
import contextlib

from fitness.processes import protocol

COMPILE_THREADS = 4  # kernels compiled at once


@contextlib.contextmanager
def side_by_side():
    """Inside the block Triton compiles on a thread pool and a launch returns at once
    (its compile-only launches), so a callable's kernels compile side by side; leaving it
    waits for them all. Triton before 3.4 has no such mode: one compile after another."""
    try:
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:
        yield
        return
    with concurrent.futures.ThreadPoolExecutor(COMPILE_THREADS) as pool, \
            AsyncCompileMode(pool, ignore_errors=True):
        yield


def stand_ins(layouts: list, device: str) -> list:
    """Returns uninitialised tensors in the layout of each tensor spec (`protocol.layouts`),
    scalars as given. Uninitialised, since filling them would be device work beside another
    candidate's timing; nothing reads their values (launches are withheld, and the static
    gate lets a candidate's host code neither read values nor compute with torch; a
    baseline is project code that does neither)."""
    import torch

    values = []
    for spec in layouts:
        if "dtype" not in spec:
            values.append(protocol.spec_value(spec))
            continue
        dtype, shape, stride, offset = protocol.tensor_layout(spec)
        storage = torch.empty(protocol.extent(shape, stride, offset), dtype=dtype, device=device)
        values.append(torch.as_strided(storage, shape, stride, offset))
    return values


def ready_to_launch(compiled: list) -> None:
    """Readies each kernel a compile-only launch returned for its first real launch, which
    Triton otherwise does lazily inside that launch's device hold: building its C launcher
    with the host's compiler (evidence: RESULTS.md#launcher-build) and loading its binary (a
    driver call, no kernel). A future whose compile failed is skipped: the call meets the error."""
    try:
        from triton.runtime._async_compile import FutureKernel
    except ImportError:
        FutureKernel = ()  # noqa: N806  (Triton before 3.4: every compile is synchronous)
    for kernel in compiled:
        if isinstance(kernel, FutureKernel):
            kernel = kernel.kernel  # set once its compile finished, None if it failed
        ready = getattr(kernel, "_init_handles", None)
        if ready is not None:
            ready()


def compile_cases(fn, cases: list, launches, device: str,
                  watch=contextlib.nullcontext()) -> str | None:
    """Calls `fn` once on stand-ins of each case's input layouts with every launch turned into
    a compilation (`launches`: an installed `LaunchCounter`), side by side, then readies what
    compiled; `watch` is entered around the calls alone. Returns why it stopped early, or
    None: an exception on stand-ins, or a kernel that cannot be readied (too much shared
    memory); neither is a verdict, the real calls that follow meet it."""
    try:
        with watch, launches.compiling_only(), side_by_side():
            for layouts in cases:
                fn(*stand_ins(layouts, device))
        ready_to_launch(launches.compiled)
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:300]
    finally:
        launches.compiled = []
    return None
