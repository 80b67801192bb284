import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"ROWS": 1}, num_warps=4),
        triton.Config({"ROWS": 2}, num_warps=4),
        triton.Config({"ROWS": 4}, num_warps=8),
    ],
    key=["n_cols"],
)
@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    x = x - tl.max(x, axis=1)[:, None]
    num = tl.exp(x)
    den = tl.sum(num, axis=1)
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], (num / den[:, None]).to(y_ptr.dtype.element_ty),
             mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n_rows, meta["ROWS"]),)
    softmax_rows_kernel[grid](x, y, n_rows, n_cols, x.stride(0), BLOCK_N=triton.next_power_of_2(n_cols))
    return y
