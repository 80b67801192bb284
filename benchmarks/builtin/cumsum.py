"""cumsum(x) -> out: inclusive prefix sum along each row of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(x: torch.Tensor) -> torch.Tensor:
    # Scanned in float64, so the ground truth carries no rounding of its own.
    return torch.cumsum(x.double(), dim=-1).to(x.dtype)


def flops(params):
    return float(common.elements(params))  # one add per element


def bytes_moved(params):
    # reads x (M * N), writes out (M * N)
    return 2.0 * common.elements(params) * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "cumsum",
    instruction=(
        "Write `cumsum(x) -> out`: the inclusive prefix sum along each row of a 2-D CUDA "
        "tensor x of shape [M, N] (float32 or float16, rows contiguous). Return a new "
        "contiguous tensor of the same shape and dtype with out[i, j] = sum_{k <= j} x[i, k]. "
        "Accumulate in float32 (or wider) and round each output once to the output dtype. "
        "M and N are any positive integers."
    ),
    reference=reference,
    make_inputs=common.matrix_inputs,
    cases=(
        Case("4096x4096 fp32", {"M": 4096, "N": 4096, "dtype": "float32"}),
        Case("8192x5000 fp16", {"M": 8192, "N": 5000, "dtype": "float16"}),
        Case("65537x257 fp32", {"M": 65537, "N": 257, "dtype": "float32"}),
        Case("512x65537 fp32", {"M": 512, "N": 65537, "dtype": "float32"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("5x257 fp32", {"M": 5, "N": 257, "dtype": "float32"}),
        Case("7x600 fp16", {"M": 7, "N": 600, "dtype": "float16"}),
    ),
    tolerance=common.widened_tolerance(1e-2, 1e-5, "float32", "float16"),
    tolerance_reason=(
        "prefix sums over up to 65537 elements: a parallel scan adds in another order than the sequential reference, and absolute differences grow like sqrt(N) around zero crossings"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=3,
    tags=("scan", "row-wise", "memory-bound"),
    dtypes=("float32", "float16"),
)
