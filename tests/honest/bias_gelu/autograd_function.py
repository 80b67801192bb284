import torch
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_fwd(X, BIAS, Y, N, stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    for off in range(0, N, BLOCK_SIZE):
        c = off + cols
        mask = c < N
        x = tl.load(X + row * stride + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(BIAS + c, mask=mask, other=0.0).to(tl.float32)
        u = x + b
        z = 0.7978845608028654 * u * (1.0 + 0.044715 * u * u)
        y = u * tl.sigmoid(2.0 * z)  # 0.5 * (1 + tanh(z)) == sigmoid(2 z)
        tl.store(Y + row * stride + c, y.to(Y.dtype.element_ty), mask=mask)


class BiasGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias):
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = min(1024, triton.next_power_of_2(N))
        _bias_gelu_fwd[(M,)](x, bias, y, N, x.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        ctx.save_for_backward(x, bias)
        return y


bias_gelu = BiasGelu.apply
