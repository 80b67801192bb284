import torch
import triton
import triton.language as tl


@triton.jit
def _online_softmax(X, Y, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m_i = tl.full([BLOCK], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK], tl.float32)
    # pass 1: running max and rescaled sum per lane
    for start in range(0, N, BLOCK):
        c = start + offs
        x = tl.load(X + row * stride + c, mask=c < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m_i - m_new))
        l_i = l_i * alpha + tl.where(x == -float("inf"), 0.0, tl.exp(x - m_new))
        m_i = m_new
    m = tl.max(m_i, axis=0)
    l = tl.sum(tl.where(m_i == -float("inf"), 0.0, l_i * tl.exp(m_i - m)), axis=0)
    # pass 2: normalise
    for start in range(0, N, BLOCK):
        c = start + offs
        x = tl.load(X + row * stride + c, mask=c < N, other=-float("inf")).to(tl.float32)
        tl.store(Y + row * stride + c, (tl.exp(x - m) / l).to(Y.dtype.element_ty), mask=c < N)


@torch.no_grad()
def softmax(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, "softmax over the last dim of a 2-D tensor"
    x = x.contiguous()
    y = torch.empty_like(x)
    M, N = x.shape
    _online_softmax[(M,)](x, y, N, x.stride(0), BLOCK=256, num_warps=4)
    return y
