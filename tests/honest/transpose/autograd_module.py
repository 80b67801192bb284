import torch
import triton
import triton.language as tl


@triton.jit
def _copy_transposed(a_ptr, b_ptr, rows, cols, stride_a, stride_b, BLOCK_R: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    r = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    m = (r[:, None] < rows) & (c[None, :] < cols)
    v = tl.load(a_ptr + r[:, None] * stride_a + c[None, :], mask=m)
    tl.store(b_ptr + c[None, :] * stride_b + r[:, None], v, mask=m)


class TransposeFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        rows, cols = x.shape
        y = torch.empty((cols, rows), dtype=x.dtype, device=x.device)
        BLOCK_R, BLOCK_C = 64, 16
        grid = (triton.cdiv(cols, BLOCK_C), triton.cdiv(rows, BLOCK_R))
        _copy_transposed[grid](x, y, rows, cols, x.stride(0), y.stride(0),
                               BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=4)
        return y


def transpose(x: torch.Tensor) -> torch.Tensor:
    return TransposeFn.apply(x)
