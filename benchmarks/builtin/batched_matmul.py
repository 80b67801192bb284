"""batched_matmul(a, b) -> c: a batch of fp16 matrix products, fp32 accumulation, fp16 out."""

import torch

from benchmarks.builtin import common


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.bmm(a.float(), b.float()).to(a.dtype)


def make_inputs(params, seed, device):
    batch, M, N, K = params["B"], params["M"], params["N"], params["K"]
    return common.normal_inputs(params, seed, device, (batch, M, K), (batch, K, N))


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
    cases=common.cases("B M N K", "32x1024x1024x1024 fp16", "64x512x512x64 fp16", "24x1000x777x513 fp16",
                       "8x2049x2049x129 fp16"),
    interpreter_cases=common.cases("B M N K", "1x1x1x1 fp16", "3x65x33x40 fp16", "2x129x17x100 fp16"),
    tags=("matmul", "batched", "compute-bound"),
    **common.FP16_MATMUL,
)
