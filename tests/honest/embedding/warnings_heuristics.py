import warnings

import torch
import triton
import triton.language as tl


@triton.heuristics({"BLOCK_D": lambda args: triton.next_power_of_2(args["D"])})
@triton.jit
def embed_whole_row(ids_ptr, w_ptr, o_ptr, D, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    wid = tl.load(ids_ptr + pid)
    d = tl.arange(0, BLOCK_D)
    m = d < D
    tl.store(o_ptr + pid * D + d, tl.load(w_ptr + wid * D + d, mask=m, other=0.0), mask=m)


def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if weight.shape[1] > 8192:
        warnings.warn("embedding: very wide rows, one program per token may spill registers")
    out = torch.empty((indices.shape[0], weight.shape[1]), dtype=weight.dtype, device=weight.device)
    embed_whole_row[(indices.shape[0],)](indices, weight, out, weight.shape[1])
    return out
