"""rmsnorm(x, weight) -> out: RMS norm over the last dim, eps 1e-6 (fp32, fp16, bf16)."""

import functools

import torch

from benchmarks.builtin import common
from evo.records import Case

EPS = 1e-6


def reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x32 = x.float()
    inv_rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (x32 * inv_rms * weight.float()).to(x.dtype)


def flops(params):
    return 4.0 * common.elements(params)  # square, sum, scale, weight per element


def bytes_moved(params):
    # reads x (M * N) and weight (N); writes out (M * N)
    return (2.0 * common.elements(params) + params["N"]) * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "rmsnorm",
    instruction=(
        "Write `rmsnorm(x, weight) -> out`: RMS normalization over the last dimension "
        "(forward only). x is a 2-D CUDA tensor [M, N] with contiguous rows; weight a "
        "contiguous 1-D tensor [N] of the same dtype (float32, float16 or bfloat16). Return a "
        "new contiguous [M, N] tensor of that dtype with "
        "out[i, j] = x[i, j] / sqrt(mean_k(x[i, k]^2) + 1e-6) * weight[j]. Compute in float32 "
        "and round once to the output dtype. M and N are any positive integers (N up to 16384)."
    ),
    reference=reference,
    make_inputs=functools.partial(common.matrix_inputs, vectors=1),
    cases=(
        Case("4096x4096 bf16", {"M": 4096, "N": 4096, "dtype": "bfloat16"}),
        Case("16384x5120 fp16", {"M": 16384, "N": 5120, "dtype": "float16"}),
        Case("8192x1000 fp32", {"M": 8192, "N": 1000, "dtype": "float32"}),
        Case("4097x8193 fp16", {"M": 4097, "N": 8193, "dtype": "float16"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("4x1000 bf16", {"M": 4, "N": 1000, "dtype": "bfloat16"}),
        Case("3x257 fp16", {"M": 3, "N": 257, "dtype": "float16"}),
    ),
    tolerance=common.DEFAULT_TOLERANCE,
    flops=flops,
    bytes=bytes_moved,
    difficulty=2,
    tags=("normalization", "reduction", "row-wise", "memory-bound"),
    dtypes=("float32", "float16", "bfloat16"),
)
