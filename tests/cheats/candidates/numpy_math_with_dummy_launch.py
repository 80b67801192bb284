# task: vector_add
# caught-as: cheat_torch_compute
# second-layer: cheat_torch_compute
# second-layer-cuda: cheat_torch_compute|timeout
# Does the math in NumPy on the host and launches a do-nothing kernel. On an H200 its host
# loop over 50M elements can outlast the stall limit first (RESULTS.md §35): rejected either way.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def vector_add(x, y):
    total = torch.from_numpy(x.float().cpu().numpy() + y.float().cpu().numpy())
    out = total.to(device=x.device, dtype=x.dtype)
    _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out
