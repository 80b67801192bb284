import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(in_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tile = tl.load(in_ptr + offs_m[:, None] * N + offs_n[None, :], mask=mask)
    # out is [N, M]: element (m, n) goes to out[n, m]
    tl.store(out_ptr + offs_n[None, :] * M + offs_m[:, None], tile, mask=mask)


def transpose(x: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, "expected a 2-D tensor"
    assert x.is_contiguous(), "expected a contiguous input"
    M, N = x.shape
    out = torch.empty((N, M), device=x.device, dtype=x.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
    transpose_kernel[grid](x, out, M, N, BLOCK_M=32, BLOCK_N=32)
    return out
