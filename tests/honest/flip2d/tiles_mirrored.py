import torch
import triton
import triton.language as tl


@triton.jit
def flip2d_kernel(src, dst, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    vals = tl.load(src + rm[:, None] * N + rn[None, :], mask=mask)
    # destination coordinates are mirrored along both axes
    out_r = M - 1 - rm
    out_c = N - 1 - rn
    tl.store(dst + out_r[:, None] * N + out_c[None, :], vals, mask=mask)


def flip2d(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, "flip2d expects a matrix"
    assert x.is_contiguous(), "expected a contiguous input"
    M, N = x.shape
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
    flip2d_kernel[grid](x, out, M, N, BLOCK_M=32, BLOCK_N=64, num_warps=4)
    return out
