"""Baseline: causal attention forward, one BLOCK_M query tile per program, online softmax over keys.

The design is chosen per shape from `CONFIGS` (see the launcher): the query and key tiles
(BLOCK_M, BLOCK_N), warps and pipelining depth, and how the causal mask is applied. Key
blocks past a tile's last query are always skipped. With MASK_DIAGONAL=1 the key blocks
wholly below the diagonal (every key visible to every query of the tile) run without the
mask, and only the blocks that cross the diagonal are masked; with 0 every block is masked.
The softmax runs in base 2: the scale 1/sqrt(d) times log2(e) is folded into one multiply-add
per score. TMA=1 moves q, k, v and out through 3-D TMA descriptors over [batch * heads, S, d]
(rows past S read as zeros and are never written; NVIDIA sm_90 and newer), else through masked
pointers. HEAVY_FIRST=1 starts each head's longest query tiles (the last ones, which see the
most keys) first, so the short ones fill the tail of the grid. WARP_SPECIALIZE (with TMA)
asks the compiler to split the key loop into producer and consumer warps; it can split only
a single loop that ends in pointer stores, so every key block is masked and out is stored
through pointers.
"""

import math

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

KNOBS = {
    "BLOCK_M": (16, 32, 64, 128),
    "BLOCK_N": (16, 32, 64, 128),
    "MASK_DIAGONAL": (0, 1),
    "TMA": (0, 1),  # 1: TMA descriptor loads and stores where the device has them
    "HEAVY_FIRST": (0, 1),  # 1: each head's query tiles in reverse, the longest first
    "WARP_SPECIALIZE": (0, 1),  # 1: producer and consumer warps in one masked key loop (with TMA)
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4),
}
DESIGN = ("MASK_DIAGONAL", "TMA", "HEAVY_FIRST", "WARP_SPECIALIZE")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "short": (("BLOCK_M", 64), ("BLOCK_N", 64), ("MASK_DIAGONAL", 1), ("TMA", 0), ("HEAVY_FIRST", 0),
              ("WARP_SPECIALIZE", 0), ("num_warps", 4), ("num_stages", 3)),
    "medium": (("BLOCK_M", 128), ("BLOCK_N", 64), ("MASK_DIAGONAL", 1), ("TMA", 0), ("HEAVY_FIRST", 0),
               ("WARP_SPECIALIZE", 0), ("num_warps", 8), ("num_stages", 3)),
    "long": (("BLOCK_M", 128), ("BLOCK_N", 64), ("MASK_DIAGONAL", 1), ("TMA", 0), ("HEAVY_FIRST", 0),
             ("WARP_SPECIALIZE", 0), ("num_warps", 8), ("num_stages", 3)),
    "huge": (("BLOCK_M", 128), ("BLOCK_N", 64), ("MASK_DIAGONAL", 1), ("TMA", 0), ("HEAVY_FIRST", 1),
             ("WARP_SPECIALIZE", 0), ("num_warps", 8), ("num_stages", 3)),
}
TMA_ALIGN_BYTES = 16
"""TMA's rule: the base and every stride but the last a multiple of 16 bytes."""
LOG2_E = 1.4426950408889634


@triton.jit
def _attend(q, k_in, v_in, acc, l_i, m_i, offs_m, start_n, head, seq_len, qk_scale,
            stride_ks, stride_vs,
            HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, TMA: tl.constexpr):
    """One key block's update of the online softmax; MASKED applies the causal and tail masks."""
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_mask = offs_n < seq_len
    if TMA:
        k = k_in.load([head, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        scores = tl.dot(q, k.T)
    else:
        # Pad with 0, the identity of the dot products' sums.
        k_t = tl.load(k_in + offs_n[None, :] * stride_ks + offs_d[:, None], mask=key_mask[None, :], other=0.0)
        scores = tl.dot(q, k_t)
    if MASKED:
        visible = (offs_m[:, None] >= offs_n[None, :]) & key_mask[None, :]
        scores = tl.where(visible, scores, -float("inf"))
    # Raw scores, base-2 logits after one multiply-add; the scale is positive, so it commutes
    # with max. Key 0 is visible to every row, so m_new is finite from the first block on.
    m_new = tl.maximum(m_i, tl.max(scores, axis=1) * qk_scale)
    p = tl.exp2(scores * qk_scale - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    if TMA:
        v = v_in.load([head, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
    else:
        v = tl.load(v_in + offs_n[:, None] * stride_vs + offs_d[None, :], mask=key_mask[:, None], other=0.0)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def _attention_kernel(q_in, k_in, v_in, out,
                      seq_len,
                      stride_qh, stride_qs,
                      stride_kh, stride_ks,
                      stride_vh, stride_vs,
                      stride_oh, stride_os,
                      qk_scale,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      MASK_DIAGONAL: tl.constexpr, TMA: tl.constexpr, TMA_STORE: tl.constexpr,
                      HEAVY_FIRST: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    # q_in, k_in, v_in: pointers, or 3-D TMA descriptors over [batch * heads, S, d] when TMA;
    # out: such a descriptor when TMA_STORE, else a pointer.
    tile_m = tl.program_id(axis=0)
    if HEAVY_FIRST:
        tile_m = tl.num_programs(axis=0) - 1 - tile_m
    start_m = tile_m * BLOCK_M
    head = tl.program_id(axis=1)  # batch * heads + head: inputs are contiguous [B, H, S, D]
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    if TMA:
        q = q_in.load([head, start_m, 0]).reshape(BLOCK_M, HEAD_DIM)
        k_head, v_head = k_in, v_in
    else:
        q = tl.load(q_in + head * stride_qh + offs_m[:, None] * stride_qs + offs_d[None, :],
                    mask=offs_m[:, None] < seq_len, other=0.0)
        k_head, v_head = k_in + head * stride_kh, v_in + head * stride_vh

    # Running row max (base-2 logits), running denominator, unnormalized output.
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # Causal: this tile's last query sees keys up to its own position, no further.
    end_n = tl.minimum(start_m + BLOCK_M, seq_len)
    masked_from = 0
    if MASK_DIAGONAL:
        # Keys below start_m are in range and visible to every query of the tile: no mask.
        masked_from = (start_m // BLOCK_N) * BLOCK_N
        for start_n in range(0, masked_from, BLOCK_N):
            acc, l_i, m_i = _attend(q, k_head, v_head, acc, l_i, m_i, offs_m, start_n, head, seq_len,
                                    qk_scale, stride_ks, stride_vs, HEAD_DIM, BLOCK_N, False, TMA)
    for start_n in tl.range(masked_from, end_n, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        acc, l_i, m_i = _attend(q, k_head, v_head, acc, l_i, m_i, offs_m, start_n, head, seq_len,
                                qk_scale, stride_ks, stride_vs, HEAD_DIM, BLOCK_N, True, TMA)

    result = acc / l_i[:, None]
    if TMA_STORE:
        out.store([head, start_m, 0], result.to(out.dtype).reshape(1, BLOCK_M, HEAD_DIM))
    else:
        tl.store(out + head * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :],
                 result.to(out.dtype.element_ty), mask=offs_m[:, None] < seq_len)


def _bucket(seq_len: int) -> str:
    """Returns the CONFIGS bucket of a sequence length."""
    return "short" if seq_len <= 1024 else "medium" if seq_len <= 2048 else "long" if seq_len <= 4096 else "huge"


def _tma_available(device: torch.device) -> bool:
    """True where TMA descriptors work: NVIDIA sm_90 and newer, and the interpreter (CPU
    tensors), which emulates them; not ROCm, whose GPUs have no TMA."""
    if device.type == "cpu":
        return True
    return torch.version.hip is None and torch.cuda.get_device_capability(device)[0] >= 9


def _tma_aligned(x: torch.Tensor) -> bool:
    """True if a TMA descriptor may address `x` as it is (see TMA_ALIGN_BYTES)."""
    return x.stride(-1) == 1 and x.data_ptr() % TMA_ALIGN_BYTES == 0 and all(
        stride > 0 and stride * x.element_size() % TMA_ALIGN_BYTES == 0 for stride in x.stride()[:-1])


def _descriptor(x: torch.Tensor, block_rows: int) -> TensorDescriptor:
    """Returns a TMA descriptor of contiguous [B, H, S, d] `x` seen as [B * H, S, d], one head's
    `block_rows` rows a block."""
    heads, seq_len, head_dim = x.shape[0] * x.shape[1], x.shape[2], x.shape[3]
    return TensorDescriptor(x, [heads, seq_len, head_dim], [seq_len * head_dim, head_dim, 1],
                            [1, block_rows, head_dim])


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    assert q.shape == k.shape == v.shape, \
        f"q, k, v shapes differ: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
    assert q.ndim == 4 and q.shape[3] == 64, f"expected [B, H, S, 64], got {tuple(q.shape)}"
    assert q.dtype == k.dtype == v.dtype == torch.float16, "expected float16 q, k, v"
    assert q.is_contiguous() and k.is_contiguous() and v.is_contiguous(), "inputs must be contiguous"
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    config = dict(CONFIGS[_bucket(seq_len)])
    block_m, block_n = config["BLOCK_M"], config["BLOCK_N"]
    # Softmax scale 1/sqrt(d), folded with log2(e) so the kernel can use exp2.
    qk_scale = 1.0 / math.sqrt(head_dim) * LOG2_E
    tma = bool(config["TMA"]) and _tma_available(q.device) and all(_tma_aligned(x) for x in (q, k, v, out))
    # The compiler splits the warps of a single key loop ending in pointer stores only.
    warp_specialize = bool(config["WARP_SPECIALIZE"]) and tma
    q_in, k_in, v_in, out_in = q, k, v, out
    if tma:
        q_in, k_in, v_in = _descriptor(q, block_m), _descriptor(k, block_n), _descriptor(v, block_n)
    if tma and not warp_specialize:
        out_in = _descriptor(out, block_m)
    grid = (triton.cdiv(seq_len, block_m), batch * heads)
    _attention_kernel[grid](q_in, k_in, v_in, out_in, seq_len,
                            q.stride(1), q.stride(2), k.stride(1), k.stride(2),
                            v.stride(1), v.stride(2), out.stride(1), out.stride(2),
                            qk_scale,
                            HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                            MASK_DIAGONAL=config["MASK_DIAGONAL"] and not warp_specialize,
                            TMA=tma, TMA_STORE=tma and not warp_specialize, HEAVY_FIRST=config["HEAVY_FIRST"],
                            WARP_SPECIALIZE=warp_specialize,
                            num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
