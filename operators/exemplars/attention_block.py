"""attention_block(q, k, v) -> softmax(q @ k.T / sqrt(d)) @ v for 2-D q (Lq x D), k, v (Lk x D).

One program per block of queries walks the keys block by block with an online softmax,
so the Lq x Lk score matrix is never written to memory.
"""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr,
                      Lq, Lk, D,
                      stride_q, stride_k, stride_v, stride_o,
                      scale,
                      BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr):
    rq = tl.program_id(axis=0) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    rd = tl.arange(0, BLOCK_D)
    q = tl.load(q_ptr + rq[:, None] * stride_q + rd[None, :],
                mask=(rq[:, None] < Lq) & (rd[None, :] < D), other=0.0).to(tl.float32)
    running_max = tl.full((BLOCK_Q,), -float("inf"), dtype=tl.float32)
    running_sum = tl.zeros((BLOCK_Q,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_Q, BLOCK_D), dtype=tl.float32)
    for start in range(0, Lk, BLOCK_K):
        rk = start + tl.arange(0, BLOCK_K)
        kv_mask = (rk[:, None] < Lk) & (rd[None, :] < D)
        k = tl.load(k_ptr + rk[:, None] * stride_k + rd[None, :], mask=kv_mask, other=0.0).to(tl.float32)
        v = tl.load(v_ptr + rk[:, None] * stride_v + rd[None, :], mask=kv_mask, other=0.0).to(tl.float32)
        scores = tl.dot(q, tl.trans(k)) * scale
        scores = tl.where(rk[None, :] < Lk, scores, -float("inf"))  # padded keys get no weight
        new_max = tl.maximum(running_max, tl.max(scores, axis=1))
        correction = tl.exp(running_max - new_max)  # rescale what was summed under the old max
        p = tl.exp(scores - new_max[:, None])
        running_sum = running_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None] + tl.dot(p, v)
        running_max = new_max
    out = acc / running_sum[:, None]
    tl.store(out_ptr + rq[:, None] * stride_o + rd[None, :], out.to(out_ptr.dtype.element_ty),
             mask=(rq[:, None] < Lq) & (rd[None, :] < D))


def attention_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    assert q.ndim == k.ndim == v.ndim == 2, "q, k, v must be 2-D"
    assert k.shape == v.shape and q.shape[1] == k.shape[1], f"shapes {q.shape}, {k.shape}, {v.shape}"
    assert k.shape[0] > 0, "at least one key is needed"
    assert q.stride(1) == k.stride(1) == v.stride(1) == 1, "rows must be contiguous"
    Lq, D = q.shape
    out = torch.empty_like(q)
    BLOCK_D = max(16, triton.next_power_of_2(D))
    grid = lambda meta: (triton.cdiv(Lq, meta["BLOCK_Q"]),)
    _attention_kernel[grid](q, k, v, out, Lq, k.shape[0], D,
                            q.stride(0), k.stride(0), v.stride(0), out.stride(0), 1.0 / math.sqrt(D),
                            BLOCK_Q=16, BLOCK_K=16, BLOCK_D=BLOCK_D, num_warps=4)
    return out
