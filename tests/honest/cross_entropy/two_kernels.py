import torch
import triton
import triton.language as tl


@triton.jit
def ce_row_kernel(logits_ptr, targets_ptr, loss_ptr, V, stride, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    base = logits_ptr + row * stride
    m = tl.full([BLOCK_V], -float("inf"), tl.float32)
    for s in range(0, V, BLOCK_V):
        c = s + tl.arange(0, BLOCK_V)
        m = tl.maximum(m, tl.load(base + c, mask=c < V, other=-float("inf")).to(tl.float32))
    row_max = tl.max(m, axis=0)
    acc = tl.zeros([BLOCK_V], tl.float32)
    for s in range(0, V, BLOCK_V):
        c = s + tl.arange(0, BLOCK_V)
        acc += tl.exp(tl.load(base + c, mask=c < V, other=-float("inf")).to(tl.float32) - row_max)
    lse = row_max + tl.log(tl.sum(acc, axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(base + target).to(tl.float32)
    tl.store(loss_ptr + row, lse - target_logit)


@triton.jit
def mean_kernel(loss_ptr, out_ptr, M, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(0, M, BLOCK):
        i = s + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + i, mask=i < M, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / M)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    assert logits.ndim == 2, f"logits must be [M, V], got {tuple(logits.shape)}"
    assert targets.shape[0] == logits.shape[0], "one target per row"
    logits = logits.contiguous()
    targets = targets.contiguous()
    M, V = logits.shape
    losses = torch.empty(M, dtype=torch.float32, device=logits.device)
    ce_row_kernel[(M,)](logits, targets, losses, V, logits.stride(0), BLOCK_V=512, num_warps=4)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    mean_kernel[(1,)](losses, out, M, BLOCK=128)
    return out
