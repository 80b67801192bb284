import torch
import triton
import triton.language as tl


@triton.jit
def bmm_batches_in_program(a_ptr, b_ptr, c_ptr, BATCH, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    """Each program owns one (m, n) tile and loops over every batch."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    for bi in range(BATCH):
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            a = tl.load(a_ptr + bi * M * K + rm[:, None] * K + rk[None, :],
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + bi * K * N + rk[:, None] * N + rn[None, :],
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + bi * M * N + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=out_mask)


@torch.no_grad()
def batched_matmul(a, b):
    a = a.contiguous()
    b = b.contiguous()
    batch, M, K = a.shape
    N = b.shape[2]
    c = torch.empty(batch, M, N, dtype=a.dtype, device=a.device)
    BM, BN, BK = 64, 16, 32
    bmm_batches_in_program[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, batch, M, N, K, BM=BM, BN=BN, BK=BK)
    return c
