import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_fwd_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    logits = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    shifted = logits - tl.max(logits, 0)
    e = tl.exp(shifted)
    tl.store(out_ptr + row * stride + offs, (e / tl.sum(e, 0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_bwd_kernel(dx_ptr, dy_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    y = tl.load(y_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    dx = y * (dy - tl.sum(y * dy, 0))
    tl.store(dx_ptr + row * stride + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


class TritonSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(N)
        _softmax_fwd_kernel[(M,)](y, x, x.stride(0), N, BLOCK=BLOCK)
        ctx.save_for_backward(y)
        ctx.BLOCK = BLOCK
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(dy)
        _softmax_bwd_kernel[(y.shape[0],)](dx, dy, y, y.stride(0), y.shape[1], BLOCK=ctx.BLOCK)
        return dx


def softmax(x: torch.Tensor) -> torch.Tensor:
    return TritonSoftmax.apply(x)
