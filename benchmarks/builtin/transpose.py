"""transpose(x) -> out: the contiguous transpose of a 2-D tensor (fp32, fp16)."""

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()


TASK = common.builtin_task(
    "transpose",
    instruction=(
        "Write `transpose(x) -> out`: x is a contiguous 2-D CUDA tensor of shape [M, N] "
        "(float32 or float16). Return a new contiguous tensor of shape [N, M] and the same "
        "dtype with out[j, i] = x[i, j]; a strided view is not enough, the result must be "
        "laid out row-major. Values are copied bit for bit. M and N are any positive integers."
    ),
    reference=reference,
    cases=common.cases("M N", "8192x8192 fp32", "4095x5003 fp16", "65537x65 fp32"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "65x33 fp32", "100x130 fp16"),
    difficulty=2,
    tags=("data-movement", "memory-bound"),
    **common.EXACT_MATRIX_COPY,
)
