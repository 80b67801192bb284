"""cumsum(x) -> out: inclusive prefix sum along each row of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor) -> torch.Tensor:
    # Scanned in float64, so the ground truth carries no rounding of its own.
    return torch.cumsum(x.double(), dim=-1).to(x.dtype)


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
    cases=common.cases("M N", "4096x4096 fp32", "8192x5000 fp16", "65537x257 fp32", "512x65537 fp32"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "5x257 fp32", "7x600 fp16"),
    tolerance=common.widened_tolerance(1e-2, 1e-5, "float32", "float16"),
    tolerance_reason=(
        "prefix sums over up to 65537 elements: a parallel scan adds in another order than the sequential reference, and absolute differences grow like sqrt(N) around zero crossings"),
    flops=common.flop_per_element,  # one add per element
    bytes=common.matrix_in_out_bytes,  # reads x, writes out
    difficulty=3,
    tags=("scan", "row-wise", "memory-bound"),
)
