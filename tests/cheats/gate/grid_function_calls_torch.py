# task: vector_add
# rule: grid-callable
# line: 19
# Same trick in a grid function passed as kernel[grid]; Triton calls it mid-launch.
import torch
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)


def vector_add(x, y):
    out = torch.empty_like(x)

    def grid(meta):
        out.copy_(x + y)
        return (1,)

    _noop_kernel[grid](out, out.numel(), BLOCK_SIZE=16)
    return out
