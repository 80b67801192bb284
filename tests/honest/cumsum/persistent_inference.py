import torch
import triton
import triton.language as tl


@triton.jit
def cumsum_persistent(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        acc = 0.0
        for s in range(0, N, BLOCK):
            c = s + tl.arange(0, BLOCK)
            m = c < N
            v = tl.where(m, tl.load(x_ptr + row * N + c, mask=m).to(tl.float32), 0.0)
            tl.store(y_ptr + row * N + c, (tl.cumsum(v, axis=0) + acc).to(y_ptr.dtype.element_ty), mask=m)
            acc += tl.sum(v, axis=0)


@torch.inference_mode()
def cumsum(x: torch.Tensor) -> torch.Tensor:
    assert x.is_contiguous(), "cumsum: x must be contiguous"
    M, N = x.shape
    y = torch.empty_like(x)
    cumsum_persistent[(min(M, 4),)](x, y, M, N, BLOCK=256, num_warps=2)
    return y
