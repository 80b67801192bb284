"""vector_add(x, y) -> out: elementwise sum of two 1-D tensors (fp32, bf16)."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


def make_inputs(params, seed, device):
    return common.normal_inputs(params, seed, device, (params["N"],), (params["N"],))


def flops(params):
    return float(params["N"])  # one add per element


def bytes_moved(params):
    # reads x and y, writes out: 3 * N elements
    return 3.0 * params["N"] * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "vector_add",
    instruction=(
        "Write `vector_add(x, y) -> out`: the elementwise sum of two contiguous 1-D CUDA "
        "tensors of the same length and dtype (float32 or bfloat16). Return a new tensor "
        "`out` with the same shape and dtype, out[i] = x[i] + y[i]. The length can be any "
        "positive integer, not only a power of two."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case("N=2^24 fp32", {"N": 1 << 24, "dtype": "float32"}),
        Case("N=50,000,017 fp32", {"N": 50_000_017, "dtype": "float32"}),
        Case("N=2^24+1 bf16", {"N": (1 << 24) + 1, "dtype": "bfloat16"}),
        Case("N=98,432 bf16", {"N": 98_432, "dtype": "bfloat16"}),
    ),
    interpreter_cases=common.cases("N", "N=1 fp32", "N=1025 fp32", "N=3000 bf16"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=1,
    tags=("elementwise", "memory-bound"),
)
