# task: vector_add
# class: 5 says done before its work ends
# twin: honest_vector_add.py
# expect: no-faster
# `c05_writes_done_from_its_host` with its runs done by one kernel: in a timed batch on a GPU
# the first run launches a single kernel over every run's lent inputs and regions (found
# among the worker's objects) and the other runs launch a kernel that does nothing (so the
# op audit sees a launch in every run: it is a lint, and this tests the clock), while a host thread writes
# each new `go` into the judge's host page as `done` the moment it appears. A context yields
# the GPU at a kernel's end; one kernel holds it to its end, a time slice at most (about
# 2.4 ms on an H200), so the judge's snapshot, queued after `done`, finds every output
# written though the clock stopped at once. Outside a timed batch (and on the interpreter,
# which has no lent buffer) it is the honest twin.
import gc
import mmap
import threading
import warnings

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _every_run_kernel(table_ptr, n_elements, BLOCK_SIZE: tl.constexpr, DTYPE: tl.constexpr):
    run = tl.program_id(axis=1)  # the table holds each run's x, y and out addresses
    x_ptr = tl.load(table_ptr + 3 * run).to(tl.pointer_type(DTYPE))
    y_ptr = tl.load(table_ptr + 3 * run + 1).to(tl.pointer_type(DTYPE))
    out_ptr = tl.load(table_ptr + 3 * run + 2).to(tl.pointer_type(DTYPE))
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(DTYPE), mask=mask)


_DTYPES = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}
_TABLES: dict = {}  # the batch's addresses -> their table on the device, made before any capture


def _batch_of(x):
    """Returns (the object holding the lent `sets` and `regions`, x's run), or (None, None)."""
    for held in gc.get_objects():
        try:
            fields = vars(held)
        except TypeError:  # no __dict__
            continue
        sets, regions = fields.get("sets"), fields.get("regions")
        if not (isinstance(sets, list) and isinstance(regions, list) and sets and len(sets) == len(regions)):
            continue
        for run, values in enumerate(sets):
            if isinstance(values, list) and values and getattr(values[0], "data_ptr", None) \
                    and torch.is_tensor(values[0]) and values[0].data_ptr() == x.data_ptr():
                return held, run
    return None, None


def _table(batch):
    """Keyed by the addresses, not the object: a case's object may take a dead one's id, and
    a stale table sent the kernel to memory released with it (an illegal access on the H200)."""
    # the first run's output is the first allocation of its region
    addresses = tuple((values[0].data_ptr(), values[1].data_ptr(), region.data_ptr())
                      for values, region in zip(batch.sets, batch.regions))
    if addresses not in _TABLES:
        _TABLES[addresses] = torch.tensor(addresses, dtype=torch.int64, device="cuda").flatten()
    return _TABLES[addresses]


def _pages() -> list:
    """Returns every open 4096-byte mapping an object of the process holds."""
    pages = []
    with warnings.catch_warnings():  # reading deprecated module attributes warns
        warnings.simplefilter("ignore")
        for held in gc.get_objects():
            try:
                pages += [value for value in vars(held).values()
                          if isinstance(value, mmap.mmap) and not value.closed and len(value) == 4096]
            except Exception:  # no __dict__, or one that will not be read
                continue
    return pages


def _early_done() -> None:
    """Copies every new value of a 4096-byte mapped page's first word (`go`) into its next
    words (`done` among them) at once."""
    seen: dict = {}
    while True:
        pages = _pages()
        for _ in range(200_000):
            for page in pages:
                try:
                    word = page[0:4]
                    if word != b"\0\0\0\0" and seen.get(id(page)) != word:
                        seen[id(page)] = word
                        page[4:16] = word * 3
                except (ValueError, IndexError):
                    continue
        if not pages:
            threading.Event().wait(0.5)


if torch.cuda.is_available():  # the interpreter has no host page: no thread to load its host
    threading.Thread(target=_early_done, daemon=True).start()


def vector_add(x, y):
    out = torch.empty_like(x)
    batch, run = _batch_of(x) if x.is_cuda and x.dtype in _DTYPES else (None, None)
    if batch is None:
        _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    elif run == 0:
        grid = (triton.cdiv(x.numel(), 1024), len(batch.sets))
        _every_run_kernel[grid](_table(batch), x.numel(), BLOCK_SIZE=1024, DTYPE=_DTYPES[x.dtype])
    else:  # every element masked off: a launch that does nothing
        _add_kernel[(1,)](x, y, out, 0, BLOCK_SIZE=1024)
    return out
