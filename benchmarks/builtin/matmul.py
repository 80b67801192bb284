"""matmul(a, b) -> c: fp16 matrix product with fp32 accumulation, fp16 out."""

import torch

from benchmarks.builtin import common


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a.float(), b.float()).to(a.dtype)


def make_inputs(params, seed, device):
    M, N, K = params["M"], params["N"], params["K"]
    return common.normal_inputs(params, seed, device, (M, K), (K, N))


TASK = common.builtin_task(
    "matmul",
    instruction=(
        "Write `matmul(a, b) -> c`: the matrix product of two contiguous float16 CUDA tensors "
        "a [M, K] and b [K, N]. Return a new contiguous float16 tensor c [M, N] with "
        "c[i, j] = sum_k a[i, k] * b[k, j], accumulated in float32 and rounded once to "
        "float16. M, N and K are any positive integers, not only multiples of 16."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=common.cases("M N K", "4096x4096x4096 fp16", "8192x8192x8192 fp16", "5000x3000x2000 fp16",
                       "4097x4097x4097 fp16"),
    interpreter_cases=common.cases("M N K", "1x1x1 fp16", "65x129x70 fp16", "100x50x200 fp16"),
    tags=("matmul", "compute-bound"),
    **common.FP16_MATMUL,
)
