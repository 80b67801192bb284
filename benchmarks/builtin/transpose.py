"""transpose(x) -> out: the contiguous transpose of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()


def flops(params):
    return 0.0  # a pure copy


def bytes_moved(params):
    # reads x (M * N), writes out (N * M)
    return 2.0 * common.elements(params) * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "transpose",
    instruction=(
        "Write `transpose(x) -> out`: x is a contiguous 2-D CUDA tensor of shape [M, N] "
        "(float32 or float16). Return a new contiguous tensor of shape [N, M] and the same "
        "dtype with out[j, i] = x[i, j]; a strided view is not enough, the result must be "
        "laid out row-major. Values are copied bit for bit. M and N are any positive integers."
    ),
    reference=reference,
    make_inputs=common.matrix_inputs,
    cases=(
        Case("8192x8192 fp32", {"M": 8192, "N": 8192, "dtype": "float32"}),
        Case("4095x5003 fp16", {"M": 4095, "N": 5003, "dtype": "float16"}),
        Case("65537x65 fp32", {"M": 65537, "N": 65, "dtype": "float32"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("65x33 fp32", {"M": 65, "N": 33, "dtype": "float32"}),
        Case("100x130 fp16", {"M": 100, "N": 130, "dtype": "float16"}),
    ),
    tolerance=common.exact_tolerance("float32", "float16"),  # a copy is exact
    flops=flops,
    bytes=bytes_moved,
    difficulty=2,
    tags=("data-movement", "memory-bound"),
    dtypes=("float32", "float16"),
)
