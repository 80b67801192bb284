import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, N, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + row * stride_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def row_sum(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"row_sum expects [M, N], got shape {tuple(x.shape)}"
    x = x.contiguous()
    M, N = x.shape
    out = torch.empty(M, dtype=x.dtype, device=x.device)
    row_sum_kernel[(M,)](x, out, N, x.stride(0), BLOCK_SIZE=512, num_warps=4)
    return out
