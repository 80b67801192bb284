import functools

import torch
import triton
import triton.language as tl


def _num_warps(args):
    block = args["BLOCK_N"]
    return 8 if block >= 2048 else 4


@triton.heuristics({"BLOCK_N": lambda args: triton.next_power_of_2(args["N"])})
@triton.heuristics({"num_warps": _num_warps})
@triton.jit
def softmax_heur_kernel(X, Y, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    r = tl.program_id(0)
    n = tl.arange(0, BLOCK_N)
    x = tl.load(X + r * stride_x + n, mask=n < N, other=-float("inf")).to(tl.float32)
    z = tl.exp(x - tl.max(x, axis=0))
    tl.store(Y + r * stride_y + n, (z / tl.sum(z, axis=0)).to(Y.dtype.element_ty), mask=n < N)


def _run(kernel, x, y):
    M, N = x.shape
    kernel[(M,)](x, y, N, x.stride(0), y.stride(0))


_launch_softmax = functools.partial(_run, softmax_heur_kernel)


def softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    _launch_softmax(x, y)
    return y
