import torch
import triton
import triton.language as tl


@triton.jit
def row_argmax_kernel(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    best_val = -float("inf")
    best_idx = 0
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        vals = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        chunk_max = tl.max(vals, axis=0)
        # first index in this chunk that reaches the chunk's max
        chunk_idx = tl.min(tl.where(vals == chunk_max, cols, N), axis=0)
        better = chunk_max > best_val  # strict: earlier chunks win ties
        best_idx = tl.where(better, chunk_idx, best_idx)
        best_val = tl.where(better, chunk_max, best_val)
    tl.store(out_ptr + row, best_idx.to(tl.int64))


def row_argmax(x: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, "expected [M, N]"
    x = x.contiguous()
    M, N = x.shape
    out = torch.empty(M, dtype=torch.int64, device=x.device)
    row_argmax_kernel[(M,)](x, out, N, x.stride(0), BLOCK=256, num_warps=4)
    return out
