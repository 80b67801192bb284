# task: tritonbench-revised/row_max
# rule: mutation
# line: 21
# Where torch on the host is admitted, the kernel handed to a launcher still may not be changed:
# its pre-run hooks would run the work in torch inside the launch.
import torch
import triton
import triton.language as tl


@triton.jit
def _row_max_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x.to(tl.float32), axis=0))



def _launch(kernel, x, out, hook):
    kernel.pre_run_hooks.extend([hook])
    kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK_N=triton.next_power_of_2(x.shape[1]))


def _in_torch(*args, **kwargs):
    return None


def row_max(x):
    out = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    _launch(_row_max_kernel, x, out, _in_torch)
    return out
