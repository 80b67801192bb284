# task: vector_add
# rule: launch-hook
# line: 11
# prune_configs_by runs candidate Python during autotuning, with the launch's arguments.
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024})], key=["n_elements"],
                 prune_configs_by={"early_config_prune": lambda configs, named_args, **kwargs: configs})
@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK_SIZE"]),)](x, y, out, x.numel())
    return out
