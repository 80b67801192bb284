"""cross_entropy(logits, targets) -> loss: mean softmax cross-entropy over rows (fp32, fp16, bf16)."""

import torch

from benchmarks.builtin import common


def reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.float(), targets)


def make_inputs(params, seed, device):
    gen = common.generator(seed, device)
    M, V = params["M"], params["V"]
    # Logits spread like a trained model's (std 4), targets anywhere in the vocabulary.
    logits = (4.0 * common.randn((M, V), torch.float32, gen, device)).to(common.dtype(params["dtype"]))
    targets = torch.randint(0, V, (M,), generator=gen, device=device, dtype=torch.int64)
    return (logits, targets)


def flops(params):
    return 4.0 * params["M"] * params["V"]  # max, subtract, exp, add per logit


def bytes_moved(params):
    # reads logits (M * V) and targets (M int64), writes one float32
    return params["M"] * params["V"] * common.itemsize(params["dtype"]) + 8.0 * params["M"] + 4.0


TASK = common.builtin_task(
    "cross_entropy",
    instruction=(
        "Write `cross_entropy(logits, targets) -> loss`: the forward softmax cross-entropy, "
        "averaged over rows. logits is a 2-D CUDA tensor [M, V] with contiguous rows (float32, "
        "float16 or bfloat16); targets a contiguous int64 tensor [M] with every value in "
        "[0, V). Return a new 0-dim float32 tensor: loss = (1 / M) * sum_i (logsumexp_j "
        "logits[i, j] - logits[i, targets[i]]), computed in float32 whatever the logits' dtype "
        "(torch.nn.functional.cross_entropy on float32 logits). No ignore index, no label "
        "smoothing, no weights. M and V are any positive integers."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=common.cases("M V", "4096x32000 fp16", "8192x50257 fp32", "4097x128256 bf16"),
    interpreter_cases=common.cases("M V", "1x2049 fp32", "4x1000 fp32", "6x3000 fp16", "3x777 bf16"),
    # The loss is float32 whatever the logits' dtype, so every case is held to fp32's bar.
    tolerance=common.widened_tolerance(1e-4, 1e-5, "float32"),
    tolerance_reason=(
        "the loss is a log-sum-exp over up to 128256 logits, summed in another order than "
        "PyTorch's; the fp32 loss is compared whatever the logits' dtype"),
    flops=flops,
    bytes=bytes_moved,
    difficulty=3,
    tags=("reduction", "loss", "memory-bound"),
)
