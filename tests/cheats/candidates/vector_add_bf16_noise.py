# task: vector_add
# caught-as: mismatch
# Adds up to 0.031 of noise to every bf16 output: inside atol * max(1, |ref|max) for
# outputs of magnitude ~5, far outside atol + rtol*|ref| for outputs near zero.
import torch
import triton
import triton.language as tl


@triton.jit
def _noisy_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, NOISE: tl.constexpr,
                      BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    noise = NOISE * tl.rand(1234, offsets)
    tl.store(out_ptr + offsets, (x + y + noise).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    noise = 0.031 if x.dtype == torch.bfloat16 else 0.0
    _noisy_add_kernel[(triton.cdiv(n_elements, 1024),)](x, y, out, n_elements, NOISE=noise,
                                                         BLOCK_SIZE=1024)
    return out
