import warnings
from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class Tiles:
    m: int = 16
    n: int = 32
    k: int = 16


TILES = Tiles()


@triton.jit
def batched_gemm_kernel(a, b, c, M, N, K, s_ab, s_am, s_ak, s_bb, s_bk, s_bn,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    bi = tl.program_id(0)
    tile = tl.program_id(1)
    n_tiles_n = tl.cdiv(N, BN)
    rm = (tile // n_tiles_n) * BM + tl.arange(0, BM)
    rn = (tile % n_tiles_n) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(a + bi * s_ab + rm[:, None] * s_am + rk[None, :] * s_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        y = tl.load(b + bi * s_bb + rk[:, None] * s_bk + rn[None, :] * s_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + bi * M * N + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def batched_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype != torch.float16:
        warnings.warn("batched_matmul is tuned for float16 inputs")
    Bsz, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((Bsz, M, N), dtype=a.dtype, device=a.device)
    grid = (Bsz, triton.cdiv(M, TILES.m) * triton.cdiv(N, TILES.n))
    batched_gemm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), a.stride(2),
                              b.stride(0), b.stride(1), b.stride(2), BM=TILES.m, BN=TILES.n, BK=TILES.k)
    return c
