import torch
import triton
import triton.language as tl


@triton.jit
def _row_loss_kernel(logits_ptr, targets_ptr, losses_ptr, V, stride_row,
                     BLOCK_V: tl.constexpr):
    """loss[row] = logsumexp(logits[row]) - logits[row, target[row]], online over the row."""
    row = tl.program_id(0)
    base = logits_ptr + row * stride_row
    m = tl.full([BLOCK_V], -1e30, tl.float32)  # finite: no inf - inf on padded lanes
    s = tl.zeros([BLOCK_V], tl.float32)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        v = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, v)
        s = s * tl.exp(m - new_m) + tl.exp(v - new_m)
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    target = tl.load(targets_ptr + row)
    picked = tl.load(base + target).to(tl.float32)
    tl.store(losses_ptr + row, row_max + tl.log(total) - picked)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = logits.contiguous()
    targets = targets.contiguous()
    M, V = logits.shape
    losses = torch.empty(M, dtype=torch.float32, device=logits.device)
    _row_loss_kernel[(M,)](logits, targets, losses, V, logits.stride(0), BLOCK_V=1024)
    return losses.mean()
