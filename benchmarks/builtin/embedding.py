"""embedding(indices, weight) -> out: gather rows of a weight table by int64 indices."""

import torch

from benchmarks.builtin import common


def reference(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.embedding(indices, weight)


def make_inputs(params, seed, device):
    gen = common.generator(seed, device)
    T, V, D = params["T"], params["V"], params["D"]
    indices = torch.randint(0, V, (T,), generator=gen, device=device, dtype=torch.int64)
    return (indices, common.randn((V, D), common.dtype(params["dtype"]), gen, device))


def bytes_moved(params):
    # reads indices (T int64) and T rows of weight (T * D), writes out (T * D)
    T, D = params["T"], params["D"]
    return 8.0 * T + 2.0 * T * D * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "embedding",
    instruction=(
        "Write `embedding(indices, weight) -> out`: gather rows of an embedding table. "
        "indices is a contiguous 1-D int64 CUDA tensor [T] with every value in [0, V); weight "
        "a 2-D tensor [V, D] with contiguous rows (float32, float16 or bfloat16). Return a new "
        "contiguous [T, D] tensor of weight's dtype with out[t, :] = weight[indices[t], :]. "
        "Indices repeat and come in any order. Values are copied bit for bit. T, V and D are "
        "any positive integers."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=common.cases("T V D", "T=16384 V=32000 D=4096 fp16", "T=8191 V=50257 D=1600 fp32",
                       "T=65537 V=128256 D=1024 bf16"),
    interpreter_cases=common.cases("T V D", "T=1 V=1 D=1 fp32", "T=9 V=100 D=513 fp32",
                                   "T=17 V=1000 D=300 fp16", "T=5 V=50 D=64 bf16"),
    tolerance=common.exact_tolerance("float32", "float16", "bfloat16"),  # a gather is exact
    flops=common.no_flops,  # a gather moves data, computes nothing
    bytes=bytes_moved,
    difficulty=2,
    tags=("gather", "data-movement", "memory-bound"),
)
