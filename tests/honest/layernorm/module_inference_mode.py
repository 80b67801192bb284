import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _ln_fwd(X, W, B, Y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    s = tl.zeros([BLOCK], tl.float32)
    s2 = tl.zeros([BLOCK], tl.float32)
    for k in range(0, N, BLOCK):
        c = k + tl.arange(0, BLOCK)
        v = tl.load(X + row * N + c, mask=c < N, other=0.0).to(tl.float32)
        s += v
        s2 += v * v
    mean = tl.sum(s, 0) / N
    var = tl.maximum(tl.sum(s2, 0) / N - mean * mean, 0.0)
    inv = 1.0 / tl.sqrt(var + eps)
    for k in range(0, N, BLOCK):
        c = k + tl.arange(0, BLOCK)
        m = c < N
        v = tl.load(X + row * N + c, mask=m, other=0.0).to(tl.float32)
        out = (v - mean) * inv * tl.load(W + c, mask=m).to(tl.float32) + tl.load(B + c, mask=m).to(tl.float32)
        tl.store(Y + row * N + c, out.to(Y.dtype.element_ty), mask=m)


class TritonLayerNorm(nn.Module):
    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    @torch.inference_mode()
    def forward(self, x, weight, bias):
        M, N = x.shape
        y = torch.empty_like(x)
        _ln_fwd[(M,)](x, weight, bias, y, N, self.eps, BLOCK=256)
        return y


def layernorm(x, weight, bias):
    return TritonLayerNorm().forward(x, weight, bias)
