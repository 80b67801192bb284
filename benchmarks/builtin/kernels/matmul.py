"""Baseline: C = A @ B in fp16 with an fp32 accumulator; tiles visited in grouped order for L2 reuse.

The design is chosen per shape from `CONFIGS` (see the launcher): the tile (BLOCK_M/N/K),
how many row-blocks share a column-block of B in L2 (GROUP_M), the pipelining depth
(num_stages), and split-K: with SPLIT_K > 1 the K loop is cut into SPLIT_K slices computed
by separate programs into an fp32 workspace, then summed in a fixed order and rounded once
(deterministic; more parallelism when M x N has few tiles and K is long).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (16, 32, 64, 128, 256),
    "BLOCK_N": (16, 32, 64, 128, 256),
    "BLOCK_K": (16, 32, 64, 128),
    "GROUP_M": (1, 2, 4, 8, 16),
    "SPLIT_K": (1, 2, 4, 8, 16),
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4, 5),
}
DESIGN = ("SPLIT_K",)
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "small": (("BLOCK_M", 64), ("BLOCK_N", 64), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
              ("num_warps", 4), ("num_stages", 3)),
    "k_heavy": (("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
                ("num_warps", 8), ("num_stages", 3)),
    "large": (("BLOCK_M", 128), ("BLOCK_N", 128), ("BLOCK_K", 64), ("GROUP_M", 8), ("SPLIT_K", 1),
              ("num_warps", 8), ("num_stages", 3)),
}


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr,
                   M, N, K,
                   stride_am, stride_ak,
                   stride_bk, stride_bn,
                   stride_cs, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr):
    # Grouped ordering: GROUP_M row-blocks share each column-block of B while it is in L2.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    # Split-K: this program's slice of the K tiles (all of them when SPLIT_K == 1).
    split = tl.program_id(axis=1)
    k_tiles = tl.cdiv(K, BLOCK_K)
    tiles_per_split = tl.cdiv(k_tiles, SPLIT_K)
    first_tile = split * tiles_per_split
    last_tile = tl.minimum(first_tile + tiles_per_split, k_tiles)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = first_tile * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(first_tile, last_tile):
        k_remaining = K - k * BLOCK_K
        # Pad with 0, the identity of the dot product's sum.
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (tl.arange(0, BLOCK_K)[None, :] < k_remaining),
                    other=0.0)
        b = tl.load(b_ptrs, mask=(tl.arange(0, BLOCK_K)[:, None] < k_remaining) & (offs_n[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # SPLIT_K == 1: c is the output; else an fp32 workspace with one [M, N] slice per split.
    c_ptrs = c_ptr + split * stride_cs + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@triton.jit
def _sum_splits_kernel(partial_ptr, c_ptr,
                       n_elements, n_splits,
                       BLOCK_SIZE: tl.constexpr):
    # partial is a contiguous [n_splits, M, N] fp32 workspace, c a contiguous [M, N] output.
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for split in range(0, n_splits):
        # Pad with 0, the identity of +; masked lanes are never stored.
        acc += tl.load(partial_ptr + split * n_elements + offsets, mask=mask, other=0.0)
    tl.store(c_ptr + offsets, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _bucket(M: int, N: int, K: int) -> str:
    """Returns the CONFIGS bucket of an M x K @ K x N product."""
    if M * N <= 512 * 512:
        return "small"
    return "k_heavy" if K >= 4 * max(M, N) else "large"


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.ndim == 2 and b.ndim == 2, f"expected 2-D inputs, got {tuple(a.shape)}, {tuple(b.shape)}"
    assert a.shape[1] == b.shape[0], f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}"
    assert a.dtype == b.dtype == torch.float16, f"expected float16 inputs, got {a.dtype}, {b.dtype}"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    config = dict(CONFIGS[_bucket(M, N, K)])
    split_k = config["SPLIT_K"]
    target = c if split_k == 1 else torch.empty((split_k, M, N), dtype=torch.float32, device=a.device)
    split_stride = 0 if split_k == 1 else target.stride(0)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), meta["SPLIT_K"])
    _matmul_kernel[grid](a, b, target, M, N, K,
                         a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         split_stride, target.stride(-2), target.stride(-1),
                         BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], BLOCK_K=config["BLOCK_K"],
                         GROUP_M=config["GROUP_M"], SPLIT_K=split_k,
                         num_warps=config["num_warps"], num_stages=config["num_stages"])
    if split_k > 1:
        _sum_splits_kernel[(triton.cdiv(M * N, 1024),)](target, c, M * N, split_k,
                                                         BLOCK_SIZE=1024, num_warps=4, num_stages=1)
    return c
