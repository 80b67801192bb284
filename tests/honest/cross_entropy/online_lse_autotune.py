import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_V": 256}, num_warps=2),
        triton.Config({"BLOCK_V": 1024}, num_warps=4),
        triton.Config({"BLOCK_V": 4096}, num_warps=8),
    ],
    key=["V"],
)
@triton.jit
def _ce_fwd_kernel(LOGITS, TARGETS, LOSS, V, stride, BLOCK_V: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK_V)
    m_i = -float("inf")
    s_i = 0.0
    for start in range(0, V, BLOCK_V):
        c = start + offs
        x = tl.load(LOGITS + r * stride + c, mask=c < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m_i, tl.max(x, 0))
        s_i = s_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m_i = m_new
    t = tl.load(TARGETS + r)
    tl.store(LOSS + r, m_i + tl.log(s_i) - tl.load(LOGITS + r * stride + t).to(tl.float32))


@triton.jit
def _mean_kernel(LOSS, OUT, M, BLOCK_M: tl.constexpr):
    i = tl.arange(0, BLOCK_M)
    tl.store(OUT, tl.sum(tl.load(LOSS + i, mask=i < M, other=0.0), 0) / M)


@torch.no_grad()
def cross_entropy(logits, targets):
    M, V = logits.shape
    per_row = torch.empty(M, device=logits.device, dtype=torch.float32)
    _ce_fwd_kernel[(M,)](logits, targets, per_row, V, logits.stride(0))
    loss = torch.empty((), device=logits.device, dtype=torch.float32)
    _mean_kernel[(1,)](per_row, loss, M, BLOCK_M=triton.next_power_of_2(M))
    return loss
