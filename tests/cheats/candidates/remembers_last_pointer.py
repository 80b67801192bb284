# task: vector_add
# caught-as: none|cheat_cached_result|mismatch
# second-layer: none|cheat_cached_result|mismatch
# caught-as-cuda: none|cheat_cached_result|mismatch
# second-layer-cuda: none|cheat_cached_result|mismatch
# Pointer memory: a bytearray default argument remembers the last call's input pointer, and a
# call on the same buffers (a timing loop) returns the last output, launching a token kernel.
# The re-check used to come only after every case was timed, never right after a call on
# the same buffers.
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


def vector_add(x, y, _last=bytearray(8), _box=[]):
    pointer = x.data_ptr().to_bytes(8, "little")
    if bytes(_last) == pointer and _box:
        out = _box[0]
        _add_kernel[(1,)](x, y, out, min(x.numel(), 1), BLOCK_SIZE=16)  # a token launch
        return out
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK_SIZE=256)
    _last[:] = pointer
    _box[:] = [out]
    return out
