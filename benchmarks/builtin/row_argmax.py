"""row_argmax(x) -> out: int64 index of each row's maximum, first index on ties (fp32, fp16)."""

import torch

from benchmarks.builtin import common


def reference(x: torch.Tensor) -> torch.Tensor:
    # torch.argmax returns the first maximal index, the tie rule the instruction states.
    return torch.argmax(x, dim=-1)


def make_inputs(params, seed, device):
    # Rounded normals (k + 0.5, never 0) tie at the row maximum in most rows of a few hundred
    # or more, so the tie rule is exercised within and across any chunking of a row.
    (x,) = common.matrix_inputs(params, seed, device)
    return ((torch.round(x.float()) + 0.5).to(x.dtype),)


def bytes_moved(params):
    # reads x (M * N), writes out (M int64)
    return common.elements(params) * common.itemsize(params["dtype"]) + 8.0 * params["M"]


TASK = common.builtin_task(
    "row_argmax",
    instruction=(
        "Write `row_argmax(x) -> out`: for each row of a 2-D CUDA tensor x of shape [M, N] "
        "(float32 or float16, rows contiguous, no NaNs), the column index of its maximum. "
        "Return a new contiguous int64 tensor of shape [M]. Ties are common: when several "
        "columns hold the row's maximum, return the smallest such index (as torch.argmax). "
        "M and N are any positive integers."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=common.cases("M N", "4096x4096 fp32", "8192x32000 fp16", "65537x100 fp32", "2048x50257 fp16"),
    interpreter_cases=common.cases("M N", "1x1 fp32", "6x700 fp16", "3x1537 fp32"),
    tolerance=common.exact_tolerance("float32", "float16"),  # indices: exact, whatever x's dtype
    flops=common.flop_per_element,  # one compare per element
    bytes=bytes_moved,
    difficulty=2,
    tags=("reduction", "row-wise", "index", "memory-bound"),
)
