import math

import torch
import triton
import triton.language as tl


@triton.jit
def _inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, offs_n, lo, hi, S, qk_scale, stride_s,
           BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptrs + start_n * stride_s, mask=cols[None, :] < S, other=0.0)
        s = tl.dot(q, k) * qk_scale
        s = tl.where((offs_m[:, None] >= cols[None, :]) & (cols[None, :] < S), s, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * stride_s, mask=cols[:, None] < S, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, S, qk_scale, stride_z, stride_h, stride_s, H,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    pid_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    base = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_s + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    k_ptrs = K + base + offs_n[None, :] * stride_s + offs_d[:, None]  # K^T tile: [HEAD_DIM, BLOCK_N]
    v_ptrs = V + base + offs_n[:, None] * stride_s + offs_d[None, :]
    m_i = tl.zeros([BLOCK_M], tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi = tl.minimum((pid_m + 1) * BLOCK_M, S)
    acc, l_i, m_i = _inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, offs_n, 0, hi, S, qk_scale, stride_s, BLOCK_N)
    tl.store(Out + base + offs_m[:, None] * stride_s + offs_d[None, :], (acc / l_i[:, None]).to(Out.dtype.element_ty),
             mask=offs_m[:, None] < S)


class _Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=True):
        assert causal, "only causal attention is implemented"
        B, H, S, D = q.shape
        o = torch.empty_like(q)
        qk_scale = 1.0 / math.sqrt(D) * 1.44269504  # fold log2(e) in, use exp2
        BLOCK_M, BLOCK_N = 64, 32
        grid = lambda args: (triton.cdiv(S, args["BLOCK_M"]), B * H)
        attn_fwd_kernel[grid](q, k, v, o, S, qk_scale, q.stride(0), q.stride(1), q.stride(2), H,
                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, HEAD_DIM=D, num_warps=4, num_stages=2)
        ctx.save_for_backward(q, k, v, o)
        return o


attention = _Attention.apply


def flash_attention(q, k, v):
    return attention(q, k, v, True)
