import math
from typing import Optional

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=8),
    ],
    key=["S", "HEAD_DIM"],
)
@triton.jit
def causal_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, scale,
                            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    m_block = tl.program_id(0)
    head = tl.program_id(1)
    off = head * S * HEAD_DIM
    rows = m_block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + off + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < S, other=0.0)
    row_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    out = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for n0 in range(0, (m_block + 1) * BLOCK_M, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        kv_mask = cols[:, None] < S
        k = tl.load(k_ptr + off + cols[:, None] * HEAD_DIM + dims[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + off + cols[:, None] * HEAD_DIM + dims[None, :], mask=kv_mask, other=0.0)
        scores = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
        scores = tl.where((cols[None, :] <= rows[:, None]) & (cols[None, :] < S), scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        correction = tl.exp(row_max - new_max)
        probs = tl.exp(scores - new_max[:, None])
        row_sum = row_sum * correction + tl.sum(probs, axis=1)
        out = out * correction[:, None] + tl.dot(probs.to(tl.float16), v).to(tl.float32)
        row_max = new_max
    tl.store(o_ptr + off + rows[:, None] * HEAD_DIM + dims[None, :], (out / row_sum[:, None]).to(tl.float16),
             mask=rows[:, None] < S)


class CausalSelfAttention(nn.Module):
    def __init__(self, scale: Optional[float] = None):
        super().__init__()
        self.scale = scale

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, S, D = q.shape
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o = torch.empty_like(q)
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(D)
        grid = lambda meta: (triton.cdiv(S, meta["BLOCK_M"]), B * H)
        causal_attention_kernel[grid](q, k, v, o, S, scale, HEAD_DIM=D)
        return o


@torch.no_grad()
def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return CausalSelfAttention()(q, k, v)
