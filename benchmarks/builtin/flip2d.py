"""flip2d(x) -> out: reverse a 2-D tensor along both dims (GEAK's case study) (fp32, fp16)."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.flip(x, dims=(0, 1))


def flops(params):
    return 0.0  # a pure copy


def bytes_moved(params):
    # reads x (M * N), writes out (M * N)
    return 2.0 * common.elements(params) * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "flip2d",
    instruction=(
        "Write `flip2d(x) -> out`: reverse a 2-D CUDA tensor x of shape [M, N] (float32 or "
        "float16, rows contiguous) along both dimensions. Return a new contiguous tensor of "
        "the same shape and dtype with out[i, j] = x[M - 1 - i, N - 1 - j] (torch.flip(x, "
        "dims=(0, 1))). Values are copied bit for bit. M and N are any positive integers."
    ),
    reference=reference,
    make_inputs=common.matrix_inputs,
    cases=(
        Case("8192x8192 fp32", {"M": 8192, "N": 8192, "dtype": "float32"}),
        Case("4095x5003 fp16", {"M": 4095, "N": 5003, "dtype": "float16"}),
        Case("16385x129 fp32", {"M": 16385, "N": 129, "dtype": "float32"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("17x257 fp32", {"M": 17, "N": 257, "dtype": "float32"}),
        Case("33x300 fp16", {"M": 33, "N": 300, "dtype": "float16"}),
    ),
    tolerance=common.exact_tolerance("float32", "float16"),  # a copy is exact
    flops=flops,
    bytes=bytes_moved,
    difficulty=1,
    tags=("data-movement", "memory-bound"),
    dtypes=("float32", "float16"),
)
