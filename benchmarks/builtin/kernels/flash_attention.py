"""Baseline: causal attention forward, one BLOCK_M query tile per program, online softmax over keys.

The design is chosen per shape from `CONFIGS` (see the launcher): the query and key tiles
(BLOCK_M, BLOCK_N), warps and pipelining depth, and how the causal mask is applied. Key
blocks past a tile's last query are always skipped. With MASK_DIAGONAL=1 the key blocks
wholly below the diagonal (every key visible to every query of the tile) run without the
mask, and only the blocks that cross the diagonal are masked; with 0 every block is masked.
"""

import math

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (16, 32, 64, 128),
    "BLOCK_N": (16, 32, 64, 128),
    "MASK_DIAGONAL": (0, 1),
    "num_warps": (2, 4, 8),
    "num_stages": (1, 2, 3, 4),
}
DESIGN = ("MASK_DIAGONAL",)
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "short": (("BLOCK_M", 64), ("BLOCK_N", 64), ("MASK_DIAGONAL", 1), ("num_warps", 4), ("num_stages", 3)),
    "long": (("BLOCK_M", 128), ("BLOCK_N", 64), ("MASK_DIAGONAL", 1), ("num_warps", 8), ("num_stages", 3)),
}


@triton.jit
def _attend(q, k_block_ptr, v_block_ptr, acc, l_i, m_i, offs_m, start_n, seq_len, qk_scale,
            stride_ks, stride_vs,
            HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """One key block's update of the online softmax; MASKED applies the causal and tail masks."""
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_mask = offs_n < seq_len
    # Pad with 0, the identity of the dot products' sums.
    k_t = tl.load(k_block_ptr + offs_n[None, :] * stride_ks + offs_d[:, None], mask=key_mask[None, :], other=0.0)
    scores = tl.dot(q, k_t) * qk_scale
    if MASKED:
        visible = (offs_m[:, None] >= offs_n[None, :]) & key_mask[None, :]
        scores = tl.where(visible, scores, -float("inf"))
    # Key 0 is visible to every row, so m_new is finite from the first block on.
    m_new = tl.maximum(m_i, tl.max(scores, axis=1))
    p = tl.exp2(scores - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    v = tl.load(v_block_ptr + offs_n[:, None] * stride_vs + offs_d[None, :], mask=key_mask[:, None], other=0.0)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr,
                      seq_len,
                      stride_qh, stride_qs,
                      stride_kh, stride_ks,
                      stride_vh, stride_vs,
                      stride_oh, stride_os,
                      qk_scale,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      MASK_DIAGONAL: tl.constexpr):
    start_m = tl.program_id(axis=0) * BLOCK_M
    head = tl.program_id(axis=1)  # batch * heads + head: inputs are contiguous [B, H, S, D]
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head * stride_qh + offs_m[:, None] * stride_qs + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    k_block_ptr = k_ptr + head * stride_kh
    v_block_ptr = v_ptr + head * stride_vh

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
            acc, l_i, m_i = _attend(q, k_block_ptr, v_block_ptr, acc, l_i, m_i, offs_m, start_n, seq_len,
                                    qk_scale, stride_ks, stride_vs, HEAD_DIM, BLOCK_N, False)
    for start_n in range(masked_from, end_n, BLOCK_N):
        acc, l_i, m_i = _attend(q, k_block_ptr, v_block_ptr, acc, l_i, m_i, offs_m, start_n, seq_len,
                                qk_scale, stride_ks, stride_vs, HEAD_DIM, BLOCK_N, True)

    out = acc / l_i[:, None]
    tl.store(out_ptr + head * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_len)


def _bucket(seq_len: int) -> str:
    """Returns the CONFIGS bucket of a sequence length."""
    return "short" if seq_len <= 1024 else "long"


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    assert q.shape == k.shape == v.shape, \
        f"q, k, v shapes differ: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
    assert q.ndim == 4 and q.shape[3] == 64, f"expected [B, H, S, 64], got {tuple(q.shape)}"
    assert q.dtype == k.dtype == v.dtype == torch.float16, "expected float16 q, k, v"
    assert q.is_contiguous() and k.is_contiguous() and v.is_contiguous(), "inputs must be contiguous"
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    config = dict(CONFIGS[_bucket(seq_len)])
    # Softmax scale 1/sqrt(d), folded with log2(e) so the kernel can use exp2.
    qk_scale = 1.0 / math.sqrt(head_dim) * 1.4426950408889634
    grid = lambda meta: (triton.cdiv(seq_len, meta["BLOCK_M"]), batch * heads)
    _attention_kernel[grid](q, k, v, out, seq_len,
                            q.stride(1), q.stride(2), k.stride(1), k.stride(2),
                            v.stride(1), v.stride(2), out.stride(1), out.stride(2),
                            qk_scale,
                            HEAD_DIM=head_dim, BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"],
                            MASK_DIAGONAL=config["MASK_DIAGONAL"],
                            num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
