"""flash_attention(q, k, v) -> out: causal attention forward, head dim 64, fp16."""

import math

import torch

from benchmarks.builtin import common


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    out = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=True)
    return out.to(q.dtype)


def make_inputs(params, seed, device):
    shape = (params["B"], params["H"], params["S"], params["D"])
    return common.normal_inputs(params, seed, device, shape, shape, shape)


def flops(params):
    # q @ k^T and p @ v, 2 * S * S * D each, half of them masked away by causality
    return 2.0 * params["B"] * params["H"] * params["S"] ** 2 * params["D"]


def bytes_moved(params):
    # reads q, k, v, writes out: 4 * B * H * S * D elements
    return 4.0 * math.prod(params[key] for key in "BHSD") * common.itemsize(params["dtype"])


TASK = common.builtin_task(
    "flash_attention",
    instruction=(
        "Write `flash_attention(q, k, v) -> out`: causal scaled dot-product attention, forward "
        "only. q, k and v are contiguous float16 CUDA tensors of shape [B, H, S, 64] (batch, "
        "heads, sequence, head dim). Return a new contiguous float16 tensor of the same shape "
        "with out[b, h, i, :] = sum_{j <= i} p[i, j] * v[b, h, j, :], where p[i, :] is the "
        "softmax over j <= i of q[b, h, i, :] . k[b, h, j, :] / sqrt(64) (query i attends to "
        "keys 0..i only; torch's scaled_dot_product_attention with is_causal=True). Accumulate "
        "in float32. B, H and S are any positive integers."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=common.cases("B H S", "B=4 H=32 S=4096 fp16", "B=2 H=16 S=8192 fp16", "B=8 H=16 S=2000 fp16",
                       "B=1 H=32 S=4097 fp16", D=64),
    interpreter_cases=common.cases("B H S", "B=1 H=1 S=1 fp16", "B=1 H=2 S=65 fp16", "B=2 H=1 S=130 fp16",
                                   D=64),
    tolerance=common.widened_tolerance(2e-3, 1e-2, "float16"),
    tolerance_reason=(
        "the probabilities are rounded to fp16 before P @ V (as in every flash kernel) and the online softmax rescales in another order than the reference's"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=5,
    tags=("attention", "matmul", "compute-bound"),
)
