import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BM": 32, "BN": 32}, num_warps=4),
        triton.Config({"BM": 64, "BN": 64}, num_warps=8),
        triton.Config({"BM": 16, "BN": 64}, num_warps=2),
    ],
    key=["M", "N"],
)
@triton.jit
def _transpose_tiles(x_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_ym, stride_yn,
                     BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn,
                mask=(rm[:, None] < M) & (rn[None, :] < N))
    xt = tl.trans(x)  # [BN, BM]
    tl.store(y_ptr + rn[:, None] * stride_ym + rm[None, :] * stride_yn, xt,
             mask=(rn[:, None] < N) & (rm[None, :] < M))


def transpose(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty((N, M), dtype=x.dtype, device=x.device)
    grid = lambda META: (triton.cdiv(M, META["BM"]), triton.cdiv(N, META["BN"]))
    _transpose_tiles[grid](x, y, M, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1))
    return y
