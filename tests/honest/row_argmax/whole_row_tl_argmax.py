import torch
import triton
import triton.language as tl


@triton.jit
def _argmax_row(x_ptr, idx_ptr, n_cols, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    row = tl.load(x_ptr + pid * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    tl.store(idx_ptr + pid, tl.argmax(row, axis=0).to(tl.int64))


@torch.inference_mode()
def row_argmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    idx = torch.empty(n_rows, dtype=torch.long, device=x.device)
    _argmax_row[(n_rows,)](x, idx, n_cols, BLOCK_N=triton.next_power_of_2(n_cols))
    return idx
