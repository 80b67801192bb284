"""rmsnorm(x, weight) -> out: RMS norm over the last dim, eps 1e-6 (fp32, fp16, bf16)."""

import functools

import torch

from benchmarks.builtin import common

EPS = 1e-6


def reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    x32 = x.float()
    inv_rms = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (x32 * inv_rms * weight.float()).to(x.dtype)


def flops(params):
    return 4.0 * common.elements(params)  # square, sum, scale, weight per element


def bytes_moved(params):
    return common.matrix_in_out_bytes(params, vectors=1)  # reads x and weight, writes out


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
    cases=common.cases("M N", "4096x4096 bf16", "16384x5120 fp16", "8192x1000 fp32", "4097x8193 fp16"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "4x1000 bf16", "3x257 fp16"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=2,
    tags=("normalization", "reduction", "row-wise", "memory-bound"),
)
