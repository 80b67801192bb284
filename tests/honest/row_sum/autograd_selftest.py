import torch
import triton
import triton.language as tl


@triton.jit
def _partial_sums(x_ptr, out_ptr, N, stride, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(tl.cdiv(N, BLOCK)):
        c = k * BLOCK + offs
        acc = acc + tl.load(x_ptr + r * stride + c, mask=c < N, other=0.0).to(tl.float32)
    tl.store(out_ptr + r, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


class RowSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        M, N = x.shape
        out = torch.empty(M, dtype=x.dtype, device=x.device)
        _partial_sums[(M,)](x, out, N, x.stride(0), BLOCK=1024)
        ctx.n_cols = N
        return out

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out[:, None].expand(-1, ctx.n_cols)


row_sum = RowSum.apply


def test_row_sum():
    x = torch.randn(9, 1000, device="cuda")
    torch.testing.assert_close(row_sum(x), x.sum(-1), atol=1e-4, rtol=1e-5)


if __name__ == "__main__":
    test_row_sum()
    print("ok")
