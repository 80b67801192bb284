"""softmax(x) -> out: softmax over the last dim of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def flops(params):
    return 5.0 * common.elements(params)  # max, subtract, exp, sum, divide per element


TASK = common.builtin_task(
    "softmax",
    instruction=(
        "Write `softmax(x) -> out`: the softmax of each row of a 2-D CUDA tensor x of shape "
        "[M, N] (float32 or float16, rows contiguous). Return a new contiguous tensor of the "
        "same shape and dtype with out[i, j] = exp(x[i, j] - max_k x[i, k]) / "
        "sum_k exp(x[i, k] - max_k x[i, k]). Compute in float32 and round once to the output "
        "dtype. M and N are any positive integers (N up to 16384), not only powers of two."
    ),
    reference=reference,
    make_inputs=common.matrix_inputs,
    cases=common.cases("M N", "4096x4096 fp32", "16384x3000 fp16", "8192x1025 fp32", "1823x781 fp16"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "3x781 fp32", "5x1025 fp16"),
    flops=flops,
    bytes=common.matrix_in_out_bytes,  # reads x once, writes out once
    difficulty=2,
    tags=("reduction", "row-wise", "memory-bound"),
)
