"""Baseline: causal attention forward, one BLOCK_M query tile per program, online softmax over keys."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr,
                      seq_len,
                      stride_qh, stride_qs,
                      stride_kh, stride_ks,
                      stride_vh, stride_vs,
                      stride_oh, stride_os,
                      qk_scale,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(axis=0) * BLOCK_M
    head = tl.program_id(axis=1)  # batch * heads + head: inputs are contiguous [B, H, S, D]
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head * stride_qh + offs_m[:, None] * stride_qs + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)

    # Running row max (base-2 logits), running denominator, unnormalized output.
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # Causal: this tile's last query sees keys up to its own position, no further.
    end_n = tl.minimum(start_m + BLOCK_M, seq_len)
    for start_n in range(0, end_n, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        key_mask = offs_n < seq_len
        # Pad with 0, the identity of the dot products' sums.
        k_t = tl.load(k_ptr + head * stride_kh + offs_n[None, :] * stride_ks + offs_d[:, None],
                      mask=key_mask[None, :], other=0.0)
        scores = tl.dot(q, k_t) * qk_scale
        visible = (offs_m[:, None] >= offs_n[None, :]) & key_mask[None, :]
        scores = tl.where(visible, scores, -float("inf"))
        # Key 0 is visible to every row, so m_new is finite from the first tile on.
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        p = tl.exp2(scores - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + head * stride_vh + offs_n[:, None] * stride_vs + offs_d[None, :],
                    mask=key_mask[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(out_ptr + head * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :],
             out.to(out_ptr.dtype.element_ty), mask=offs_m[:, None] < seq_len)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    assert q.shape == k.shape == v.shape, \
        f"q, k, v shapes differ: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
    assert q.ndim == 4 and q.shape[3] == 64, f"expected [B, H, S, 64], got {tuple(q.shape)}"
    assert q.dtype == k.dtype == v.dtype == torch.float16, "expected float16 q, k, v"
    assert q.is_contiguous() and k.is_contiguous() and v.is_contiguous(), "inputs must be contiguous"
    batch, heads, seq_len, head_dim = q.shape
    out = torch.empty_like(q)
    # Softmax scale 1/sqrt(d), folded with log2(e) so the kernel can use exp2.
    qk_scale = 1.0 / math.sqrt(head_dim) * 1.4426950408889634
    grid = lambda meta: (triton.cdiv(seq_len, meta["BLOCK_M"]), batch * heads)
    _attention_kernel[grid](q, k, v, out, seq_len,
                            q.stride(1), q.stride(2), k.stride(1), k.stride(2),
                            v.stride(1), v.stride(2), out.stride(1), out.stride(2),
                            qk_scale,
                            HEAD_DIM=head_dim, BLOCK_M=128, BLOCK_N=64,
                            num_warps=8, num_stages=3)
    return out
