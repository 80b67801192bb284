"""row_sum(x) -> out: the sum of each row of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor) -> torch.Tensor:
    # Summed in float64, so the ground truth carries no rounding of its own.
    return x.double().sum(dim=-1).to(x.dtype)


def bytes_moved(params):
    return (common.elements(params) + params["M"]) * common.itemsize(params["dtype"])  # reads x, writes out


TASK = common.builtin_task(
    "row_sum",
    instruction=(
        "Write `row_sum(x) -> out`: the sum of each row of a 2-D CUDA tensor x of shape "
        "[M, N] (float32 or float16, rows contiguous). Return a new contiguous 1-D tensor of "
        "shape [M] and x's dtype with out[i] = sum_j x[i, j]. Accumulate in float32 (or wider) "
        "and round once to the output dtype. M and N are any positive integers."
    ),
    reference=reference,
    make_inputs=common.matrix_inputs,
    cases=common.cases("M N", "4096x4096 fp32", "8192x5000 fp16", "65537x128 fp32", "1024x65537 fp16"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "5x513 fp16", "9x1000 fp32"),
    # One widening per dtype, merged entry by entry (each call returns every dtype's entry).
    tolerance={**common.widened_tolerance(2e-4, 1e-3, "float16"),
               "float32": common.widened_tolerance(1e-4, 1.3e-6, "float32")["float32"]},
    tolerance_reason=(
        "sums of up to 65537 elements accumulated in fp32 in another order than PyTorch's "
        "differ from it by a few 1e-5, most for fp16 outputs near zero "
        "(evidence: RESULTS.md#row-sum-tolerance)"),
    flops=common.flop_per_element,  # one add per element
    bytes=bytes_moved,
    difficulty=2,
    tags=("reduction", "row-wise", "memory-bound"),
)
