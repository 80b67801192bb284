"""relu(x) -> max(x, 0) elementwise over a contiguous tensor of any shape: the simplest 1-D launch."""

import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # the last block runs past the end
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0).to(out_ptr.dtype.element_ty), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    assert x.is_contiguous(), "input must be contiguous"
    out = torch.empty_like(x)
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    _relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=1024, num_warps=4)
    return out
