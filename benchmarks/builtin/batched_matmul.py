"""batched_matmul(a, b) -> c: a batch of fp16 matrix products, fp32 accumulation, fp16 out."""

import torch

from benchmarks.builtin import common
from evo.records import Case


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.bmm(a.float(), b.float()).to(a.dtype)


def make_inputs(params, seed, device):
    gen = common.generator(seed, device)
    dtype = common.dtype(params["dtype"])
    batch, M, N, K = params["B"], params["M"], params["N"], params["K"]
    a = common.randn((batch, M, K), dtype, gen, device)
    return (a, common.randn((batch, K, N), dtype, gen, device))


def flops(params):
    return 2.0 * params["B"] * params["M"] * params["N"] * params["K"]  # multiply-adds


def bytes_moved(params):
    # reads a (B * M * K) and b (B * K * N) once, writes c (B * M * N)
    batch, M, N, K = params["B"], params["M"], params["N"], params["K"]
    return batch * (M * K + K * N + M * N) * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "batched_matmul",
    instruction=(
        "Write `batched_matmul(a, b) -> c`: a batch of matrix products of two contiguous "
        "float16 CUDA tensors a [B, M, K] and b [B, K, N]. Return a new contiguous float16 "
        "tensor c [B, M, N] with c[z, i, j] = sum_k a[z, i, k] * b[z, k, j], accumulated in "
        "float32 and rounded once to float16 (torch.bmm). B, M, N and K are any positive "
        "integers, not only multiples of 16."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=(
        Case("32x1024x1024x1024 fp16", {"B": 32, "M": 1024, "N": 1024, "K": 1024, "dtype": "float16"}),
        Case("64x512x512x64 fp16", {"B": 64, "M": 512, "N": 512, "K": 64, "dtype": "float16"}),
        Case("24x1000x777x513 fp16", {"B": 24, "M": 1000, "N": 777, "K": 513, "dtype": "float16"}),
        Case("8x2049x2049x129 fp16", {"B": 8, "M": 2049, "N": 2049, "K": 129, "dtype": "float16"}),
    ),
    interpreter_cases=(
        Case("1x1x1x1 fp16", {"B": 1, "M": 1, "N": 1, "K": 1, "dtype": "float16"}),
        Case("3x65x33x40 fp16", {"B": 3, "M": 65, "N": 33, "K": 40, "dtype": "float16"}),
        Case("2x129x17x100 fp16", {"B": 2, "M": 129, "N": 17, "K": 100, "dtype": "float16"}),
    ),
    tolerance=common.widened_tolerance(1e-2, 1e-3, "float16"),
    tolerance_reason=(
        "fp32 accumulation over K in another order than cuBLAS's: absolute differences grow like sqrt(K) and show on outputs near zero"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=4,
    tags=("matmul", "batched", "compute-bound"),
    dtypes=("float16",),
)
