# task: vector_add
# caught-as: nondeterministic
# Noise just inside the fp32 tolerance, seeded by where the inputs happen to live: each
# call alone passes, but the same inputs twice disagree by far more than rounding can.
import torch
import triton
import triton.language as tl


@triton.jit
def _jittery_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, seed, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    noise = 8e-6 * (tl.rand(seed, offsets) - 0.5)
    tl.store(out_ptr + offsets, (x + y + noise).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    seed = (x.data_ptr() // 64) % 100003
    _jittery_add_kernel[(triton.cdiv(n_elements, 1024),)](x, y, out, n_elements, seed,
                                                           BLOCK_SIZE=1024)
    return out
