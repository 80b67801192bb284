import torch
import triton
import triton.language as tl


@triton.jit
def argmax_fwd(x_ptr, out_ptr, N, stride_x, BLOCK_N: tl.constexpr):
    row_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    run_max = tl.full([BLOCK_N], -float("inf"), dtype=tl.float32)
    run_idx = tl.zeros([BLOCK_N], dtype=tl.int32)
    for start in range(0, N, BLOCK_N):
        c = start + offs
        v = tl.load(x_ptr + row_id * stride_x + c, mask=c < N, other=-float("inf")).to(tl.float32)
        upd = v > run_max  # per lane: keep the earliest column on ties
        run_idx = tl.where(upd, c, run_idx)
        run_max = tl.where(upd, v, run_max)
    row_max = tl.max(run_max, axis=0)
    first = tl.min(tl.where(run_max == row_max, run_idx, 2147483647), axis=0)
    tl.store(out_ptr + row_id, first.to(tl.int64))


class RowArgmax:
    def __init__(self, block_n: int = 512, num_warps: int = 4):
        self.block_n = block_n
        self.num_warps = num_warps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        out = torch.empty(M, dtype=torch.int64, device=x.device)
        argmax_fwd[(M,)](x, out, N, x.stride(0), BLOCK_N=self.block_n, num_warps=self.num_warps)
        return out


def row_argmax(x: torch.Tensor) -> torch.Tensor:
    return RowArgmax().forward(x)
