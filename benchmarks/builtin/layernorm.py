"""layernorm(x, weight, bias) -> out: layer norm over the last dim, eps 1e-5 (fp32, fp16, bf16)."""

import functools

import torch

from benchmarks.builtin import common
from evo.records import Case

EPS = 1e-5


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), EPS)
    return out.to(x.dtype)


def flops(params):
    return 7.0 * common.elements(params)  # sum, subtract, square, sum, scale, weight, bias


def bytes_moved(params):
    # reads x (M * N), weight and bias (2 * N); writes out (M * N)
    return (2.0 * common.elements(params) + 2 * params["N"]) * common.itemsize(params["dtype"])


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
    cases=(
        Case("4096x4096 fp16", {"M": 4096, "N": 4096, "dtype": "float16"}),
        Case("8192x5120 bf16", {"M": 8192, "N": 5120, "dtype": "bfloat16"}),
        Case("16384x1000 fp32", {"M": 16384, "N": 1000, "dtype": "float32"}),
        Case("8193x1025 fp16", {"M": 8193, "N": 1025, "dtype": "float16"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("4x1000 fp16", {"M": 4, "N": 1000, "dtype": "float16"}),
        Case("3x257 bf16", {"M": 3, "N": 257, "dtype": "bfloat16"}),
    ),
    tolerance=common.DEFAULT_TOLERANCE,
    flops=flops,
    bytes=bytes_moved,
    difficulty=3,
    tags=("normalization", "reduction", "row-wise", "memory-bound"),
    dtypes=("float32", "float16", "bfloat16"),
)
