"""softmax(x) -> out: softmax over the last dim of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def flops(params):
    return 5.0 * common.elements(params)  # max, subtract, exp, sum, divide per element


def bytes_moved(params):
    # reads x once, writes out once: 2 * M * N elements
    return 2.0 * common.elements(params) * common.itemsize(params["dtype"])


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
    cases=(
        Case("4096x4096 fp32", {"M": 4096, "N": 4096, "dtype": "float32"}),
        Case("16384x3000 fp16", {"M": 16384, "N": 3000, "dtype": "float16"}),
        Case("8192x1025 fp32", {"M": 8192, "N": 1025, "dtype": "float32"}),
        Case("1823x781 fp16", {"M": 1823, "N": 781, "dtype": "float16"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("3x781 fp32", {"M": 3, "N": 781, "dtype": "float32"}),
        Case("5x1025 fp16", {"M": 5, "N": 1025, "dtype": "float16"}),
    ),
    tolerance=common.DEFAULT_TOLERANCE,
    flops=flops,
    bytes=bytes_moved,
    difficulty=2,
    tags=("reduction", "row-wise", "memory-bound"),
    dtypes=("float32", "float16"),
)
