# task: vector_add
# class: 7 caches on repeated or predictable inputs
# twin: honest_vector_add.py
# expect: no-faster
# Keeps its last 8 (inputs, output) pairs as raw bytes, read through ctypes (no torch op, no
# NumPy: nothing an op recorder sees). A call whose inputs hold the same bytes as a kept
# pair's (same buffers refilled alike, or a copy elsewhere) gets that output back; a call
# whose inputs are a rotation of a kept pair's (the same shift for x and y: a harness that
# rotates staged inputs between runs) gets the kept output rotated by memmove. Either way it
# launches only an empty kernel. On a GPU it keys by the first 64 elements only.
import ctypes

import torch
import triton
import triton.language as tl

_KEPT: list = []  # (shape, dtype, x bytes, y bytes, output)


def _bytes(t) -> bytes:
    flat = t.reshape(-1)
    if t.is_cuda:
        flat = flat[:64].cpu()
    return ctypes.string_at(flat.data_ptr(), flat.numel() * flat.element_size())


def _shift(kept: bytes, now: bytes, size: int):
    """Returns s when `now` is `kept` rotated left by s elements, else None."""
    probe, at = now[:8 * size], kept.find(now[:8 * size])
    while at != -1:
        if at % size == 0 and kept[at:] + kept[:at] == now:
            return at // size
        at = kept.find(probe, at + 1)
    return None


def _rotated(out, shift: int):
    fresh = torch.empty_like(out)
    size, n = out.element_size(), out.numel()
    ctypes.memmove(fresh.data_ptr(), out.data_ptr() + shift * size, (n - shift) * size)
    ctypes.memmove(fresh.data_ptr() + (n - shift) * size, out.data_ptr(), shift * size)
    return fresh


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


def vector_add(x, y):
    xb, yb, size = _bytes(x), _bytes(y), x.element_size()
    for shape, dtype, kx, ky, kept in reversed(_KEPT):
        if (shape, dtype) != (x.shape, x.dtype):
            continue
        if (kx, ky) == (xb, yb):
            out = kept.clone()
            _touch[(1,)](out)
            return out
        shift = None if x.is_cuda else _shift(kx, xb, size)
        if shift is not None and ky[shift * size:] + ky[:shift * size] == yb:
            out = _rotated(kept, shift)
            _touch[(1,)](out)
            return out
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
    _KEPT.append((x.shape, x.dtype, xb, yb, out))
    del _KEPT[:-8]
    return out
