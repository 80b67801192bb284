# task: transpose
# caught-as: cheat_torch_compute
# second-layer: cheat_torch_compute
# The whole transpose as a torch copy from a transposed view, plus a dummy launch: the gate
# refuses the reordering view, and the runtime audit refuses the copy in a data-movement task.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def transpose(x):
    out = torch.empty((x.shape[1], x.shape[0]), dtype=x.dtype, device=x.device)
    out.copy_(x.t())
    _noop_kernel[(1,)](out, out.numel(), BLOCK_SIZE=16)
    return out
