import torch
import triton
import triton.language as tl


def bmm_grid(meta):
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]), triton.cdiv(meta["N"], meta["BLOCK_N"]), meta["BATCH"])


@triton.jit
def _tile_dot(a_ptrs, b_ptrs, k_rem, offs_k, mask_m, mask_n, acc):
    a = tl.load(a_ptrs, mask=mask_m[:, None] & (offs_k[None, :] < k_rem), other=0.0)
    b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_rem) & mask_n[None, :], other=0.0)
    return tl.dot(a, b, acc)


@triton.jit
def bmm_kernel(A, B, C, BATCH, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    bid = tl.program_id(2)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + bid * M * K + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = B + bid * K * N + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = _tile_dot(a_ptrs, b_ptrs, K - k, offs_k, offs_m < M, offs_n < N, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(C + bid * M * N + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class BatchedMatmul:
    def __init__(self, block_m=32, block_n=16, block_k=64):
        self.block_m, self.block_n, self.block_k = block_m, block_n, block_k

    def forward(self, a, b):
        BATCH, M, K = a.shape
        N = b.shape[2]
        c = torch.empty((BATCH, M, N), dtype=torch.float16, device=a.device)
        bmm_kernel[bmm_grid](a, b, c, BATCH, M, N, K, BLOCK_M=self.block_m, BLOCK_N=self.block_n,
                             BLOCK_K=self.block_k)
        return c


def batched_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return BatchedMatmul().forward(a, b)


if __name__ == "__main__":
    import time

    x = torch.randn(3, 65, 40, device="cuda", dtype=torch.float16)
    y = torch.randn(3, 40, 33, device="cuda", dtype=torch.float16)
    t0 = time.time()
    z = batched_matmul(x, y)
    print(torch.allclose(z, torch.bmm(x, y), atol=1e-2, rtol=1e-3), f"{time.time() - t0:.3f}s")
