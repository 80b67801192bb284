"""Baseline: mean cross-entropy; one program per row (online log-sum-exp), then one mean program."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_loss_kernel(logits_ptr, targets_ptr, losses_ptr,
                     V,
                     stride_row,
                     BLOCK_V: tl.constexpr):
    row = tl.program_id(axis=0)
    row_ptr = logits_ptr + row * stride_row
    # Online log-sum-exp: a running max and a sum of exponentials rescaled when the max grows.
    running_max = tl.full((), -float("inf"), dtype=tl.float32)
    running_sum = tl.zeros((), dtype=tl.float32)
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        # Pad with -inf, the identity of max; exp(-inf) = 0 adds nothing to the sum.
        x = tl.load(row_ptr + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    # Scalar loads: row < M in every program, and targets lie in [0, V) by contract.
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_ptr + target).to(tl.float32)
    tl.store(losses_ptr + row, tl.log(running_sum) + running_max - target_logit)


@triton.jit
def _mean_kernel(values_ptr, out_ptr,
                 n_values,
                 BLOCK_SIZE: tl.constexpr):
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_values, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(values_ptr + offsets, mask=offsets < n_values, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_values)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    assert logits.ndim == 2, f"expected logits of shape [M, V], got {tuple(logits.shape)}"
    M, V = logits.shape
    assert targets.shape == (M,), f"targets shape {tuple(targets.shape)} != ({M},)"
    assert targets.dtype == torch.int64, f"targets must be int64, got {targets.dtype}"
    assert logits.stride(1) == 1 and targets.is_contiguous(), "inputs must be contiguous"
    losses = torch.empty((M,), dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    _row_loss_kernel[(M,)](logits, targets, losses, V, logits.stride(0),
                           BLOCK_V=2048, num_warps=8, num_stages=2)
    _mean_kernel[(1,)](losses, out, M, BLOCK_SIZE=1024, num_warps=4, num_stages=1)
    return out
