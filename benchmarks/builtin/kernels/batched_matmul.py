"""Baseline: C[b] = A[b] @ B[b] in fp16 with an fp32 accumulator; grid axis 1 walks the batch.

The design is chosen per shape from `CONFIGS` (see the launcher): the tile (BLOCK_M/N/K),
how many row-blocks share a column-block of B in L2 (GROUP_M; 1 is plain row-major order),
warps and pipelining depth (num_stages).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (16, 32, 64, 128, 256),
    "BLOCK_N": (16, 32, 64, 128, 256),
    "BLOCK_K": (16, 32, 64, 128),
    "GROUP_M": (1, 2, 4, 8, 16),
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4, 5),
}
DESIGN = ()
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "short_k": (("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 32), ("GROUP_M", 1),
                ("num_warps", 4), ("num_stages", 4)),
    "long_k": (("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 32), ("GROUP_M", 1),
               ("num_warps", 4), ("num_stages", 4)),
}


@triton.jit
def _batched_matmul_kernel(a_ptr, b_ptr, c_ptr,
                           M, N, K,
                           stride_ab, stride_am, stride_ak,
                           stride_bb, stride_bk, stride_bn,
                           stride_cb, stride_cm, stride_cn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    # Grouped ordering: GROUP_M row-blocks share each column-block of B while it is in L2.
    tile = tl.program_id(axis=0)
    batch = tl.program_id(axis=1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_in_group = GROUP_M * tiles_n
    first_m = (tile // tiles_in_group) * GROUP_M
    group_size_m = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (tile % tiles_in_group) % group_size_m
    tile_n = (tile % tiles_in_group) // group_size_m
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_batch = a_ptr + batch * stride_ab
    b_batch = b_ptr + batch * stride_bb

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        # Pad with 0, the identity of the dot product's sum.
        a_tile = tl.load(a_batch + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                         mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b_tile = tl.load(b_batch + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                         mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a_tile, b_tile, acc)

    out_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=out_mask)


def _bucket(K: int) -> str:
    """Returns the CONFIGS bucket of a product with inner dimension K."""
    return "short_k" if K <= 128 else "long_k"


def batched_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.ndim == 3 and b.ndim == 3, f"expected 3-D inputs, got {tuple(a.shape)}, {tuple(b.shape)}"
    assert a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1], \
        f"shapes do not multiply batch-wise: {tuple(a.shape)} @ {tuple(b.shape)}"
    assert a.dtype == b.dtype == torch.float16, f"expected float16 inputs, got {a.dtype}, {b.dtype}"
    batch, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((batch, M, N), dtype=a.dtype, device=a.device)
    config = dict(CONFIGS[_bucket(K)])
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), batch)
    _batched_matmul_kernel[grid](a, b, c, M, N, K,
                                 a.stride(0), a.stride(1), a.stride(2),
                                 b.stride(0), b.stride(1), b.stride(2),
                                 c.stride(0), c.stride(1), c.stride(2),
                                 BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"],
                                 BLOCK_K=config["BLOCK_K"], GROUP_M=config["GROUP_M"],
                                 num_warps=config["num_warps"], num_stages=config["num_stages"])
    return c
