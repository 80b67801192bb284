"""layernorm(x, weight, bias) -> out: layer norm over the last dim, eps 1e-5 (fp32, fp16, bf16)."""

import functools

import torch

from benchmarks.builtin import common

EPS = 1e-5


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), EPS)
    return out.to(x.dtype)


def flops(params):
    return 7.0 * common.elements(params)  # sum, subtract, square, sum, scale, weight, bias


def bytes_moved(params):
    return common.matrix_in_out_bytes(params, vectors=2)  # reads x, weight and bias; writes out


TASK = common.builtin_task(
    "layernorm",
    instruction=(
        "Write `layernorm(x, weight, bias) -> out`: layer normalization over the last "
        "dimension (forward only). x is a 2-D CUDA tensor [M, N] with contiguous rows; weight "
        "and bias are contiguous 1-D tensors [N]; all three share one dtype (float32, float16 "
        "or bfloat16). Return a new contiguous [M, N] tensor of that dtype with "
        "out[i, j] = (x[i, j] - mean_i) / sqrt(var_i + 1e-5) * weight[j] + bias[j], where "
        "mean_i and var_i are the mean and the biased variance (divide by N) of row i. "
        "Compute in float32 and round once to the output dtype. M and N are any positive "
        "integers (N up to 16384)."
    ),
    reference=reference,
    make_inputs=functools.partial(common.matrix_inputs, vectors=2),
    cases=common.cases("M N", "4096x4096 fp16", "8192x5120 bf16", "16384x1000 fp32", "8193x1025 fp16"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "4x1000 fp16", "3x257 bf16"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=3,
    tags=("normalization", "reduction", "row-wise", "memory-bound"),
)
