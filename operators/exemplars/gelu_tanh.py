"""gelu_tanh(x) -> the tanh approximation of GELU, elementwise; tanh built from exp, in fp32."""

import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_tanh_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) * (x + 0.044715 x^3)
    # tanh(u) = 1 - 2 / (exp(2u) + 1); |u| <= 15 keeps exp finite, and tanh(15) is 1 in fp32.
    inner = tl.minimum(tl.maximum(inner, -15.0), 15.0)
    tanh_inner = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
    y = 0.5 * x * (1.0 + tanh_inner)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    assert x.is_contiguous(), "input must be contiguous"
    out = torch.empty_like(x)
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    _gelu_tanh_kernel[grid](x, out, n_elements, BLOCK_SIZE=1024, num_warps=4)
    return out
