"""row_argmax(x) -> out: int64 index of each row's maximum, first index on ties (fp32, fp16)."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(x: torch.Tensor) -> torch.Tensor:
    # torch.argmax returns the first maximal index, the tie rule the instruction states.
    return torch.argmax(x, dim=-1)


def make_inputs(params, seed, device):
    # Rounded normals (k + 0.5, never 0) tie at the row maximum in most rows of a few hundred
    # or more, so the tie rule is exercised within and across any chunking of a row.
    (x,) = common.matrix_inputs(params, seed, device)
    return ((torch.round(x.float()) + 0.5).to(x.dtype),)


def flops(params):
    return float(common.elements(params))  # one compare per element


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
    cases=(
        Case("4096x4096 fp32", {"M": 4096, "N": 4096, "dtype": "float32"}),
        Case("8192x32000 fp16", {"M": 8192, "N": 32000, "dtype": "float16"}),
        Case("65537x100 fp32", {"M": 65537, "N": 100, "dtype": "float32"}),
        Case("2048x50257 fp16", {"M": 2048, "N": 50257, "dtype": "float16"}),
    ),
    interpreter_cases=(
        Case("1x1 fp32", {"M": 1, "N": 1, "dtype": "float32"}),
        Case("6x700 fp16", {"M": 6, "N": 700, "dtype": "float16"}),
        Case("3x1537 fp32", {"M": 3, "N": 1537, "dtype": "float32"}),
    ),
    tolerance=common.exact_tolerance("float32", "float16"),  # indices: exact, whatever x's dtype
    flops=flops,
    bytes=bytes_moved,
    difficulty=2,
    tags=("reduction", "row-wise", "index", "memory-bound"),
    dtypes=("float32", "float16"),
)
