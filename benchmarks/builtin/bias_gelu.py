"""bias_gelu(x, bias) -> out: GELU (tanh form) of x[M, N] + bias[N] (fp32, fp16, bf16)."""

import functools

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    u = x.float() + bias.float()
    return torch.nn.functional.gelu(u, approximate="tanh").to(x.dtype)


def flops(params):
    return 15.0 * common.elements(params)  # bias add + tanh-GELU: ~15 operations per element


def bytes_moved(params):
    return common.matrix_in_out_bytes(params, vectors=1)  # reads x and bias, writes out


TASK = common.builtin_task(
    "bias_gelu",
    instruction=(
        "Write `bias_gelu(x, bias) -> out`: x is a 2-D CUDA tensor [M, N] with contiguous "
        "rows, bias a contiguous 1-D tensor [N] of the same dtype (float32, float16 or "
        "bfloat16). Return a new contiguous [M, N] tensor of that dtype with "
        "out[i, j] = gelu(x[i, j] + bias[j]), using the tanh approximation: "
        "gelu(u) = 0.5 * u * (1 + tanh(sqrt(2 / pi) * (u + 0.044715 * u^3))) "
        "(torch.nn.functional.gelu(u, approximate='tanh')). Compute in float32 and round once "
        "to the output dtype. M and N are any positive integers."
    ),
    reference=reference,
    make_inputs=functools.partial(common.matrix_inputs, vectors=1),
    cases=common.cases("M N", "8192x8192 fp16", "4096x11008 bf16", "4097x4096 fp32", "16384x3001 fp16"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "3x1000 fp16", "5x513 bf16"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=1,
    tags=("elementwise", "fusion", "memory-bound"),
)
