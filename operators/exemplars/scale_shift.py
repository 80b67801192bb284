"""scale_shift(x, scale, shift) -> x * scale + shift with float scalars: scalars pass as plain arguments."""

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_shift_kernel(x_ptr, out_ptr, n_elements, scale, shift, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = x * scale + shift  # one fused multiply-add per element
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def scale_shift(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    assert x.is_contiguous(), "input must be contiguous"
    out = torch.empty_like(x)
    n_elements = x.numel()
    grid = (triton.cdiv(n_elements, 512),)
    _scale_shift_kernel[grid](x, out, n_elements, float(scale), float(shift), BLOCK_SIZE=512, num_warps=4)
    return out
