# task: vector_add
# device: cuda
# caught-as: nan|mismatch
# second-layer: nan|mismatch
# The call that a CUDA graph captures launches 70% of the blocks: every replay, which is
# what is timed, does 70% of the work, while every eager (checked) call does it all.
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


def vector_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    blocks = triton.cdiv(n, 1024)
    if torch.cuda.is_current_stream_capturing():
        blocks = max(1, blocks * 7 // 10)
    _add_kernel[(blocks,)](x, y, out, n, BLOCK_SIZE=1024)
    return out
