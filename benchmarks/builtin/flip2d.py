"""flip2d(x) -> out: reverse a 2-D tensor along both dims (GEAK's case study) (fp32, fp16)."""

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.flip(x, dims=(0, 1))


TASK = common.builtin_task(
    "flip2d",
    instruction=(
        "Write `flip2d(x) -> out`: reverse a 2-D CUDA tensor x of shape [M, N] (float32 or "
        "float16, rows contiguous) along both dimensions. Return a new contiguous tensor of "
        "the same shape and dtype with out[i, j] = x[M - 1 - i, N - 1 - j] (torch.flip(x, "
        "dims=(0, 1))). Values are copied bit for bit. M and N are any positive integers."
    ),
    reference=reference,
    cases=common.cases("M N", "8192x8192 fp32", "4095x5003 fp16", "16385x129 fp32"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "17x257 fp32", "33x300 fp16"),
    difficulty=1,
    tags=("data-movement", "memory-bound"),
    **common.EXACT_MATRIX_COPY,
)
