# task: softmax
# caught-as: mismatch
# fp16 rows scaled by 10.2: every output is 10x too large, yet each is far below 1, so a
# tolerance of atol * max(1, |ref|max) let it pass. Per element (atol + rtol*|ref|) it fails.
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr,
                    SCALE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=0))
    out = numerator / tl.sum(numerator, axis=0) * SCALE
    tl.store(out_ptr + row * stride_row + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    scale = 10.2 if x.dtype == torch.float16 else 1.0
    _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0),
                               BLOCK_SIZE=triton.next_power_of_2(n_cols), SCALE=scale)
    return out
