from dataclasses import dataclass
from typing import Tuple

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class CEConfig:
    rows_per_program: int = 2
    block_v: int = 256


@triton.jit
def ce_multi_row_kernel(logits, targets, losses, M, V, stride, ROWS: tl.constexpr, BLOCK_V: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    m = tl.full([ROWS], -float("inf"), tl.float32)
    s = tl.zeros([ROWS], tl.float32)
    for v0 in range(0, V, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        mask = rmask[:, None] & (cols[None, :] < V)
        x = tl.load(logits + rows[:, None] * stride + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    t = tl.load(targets + rows, mask=rmask, other=0)
    picked = tl.load(logits + rows * stride + t, mask=rmask, other=0.0).to(tl.float32)
    tl.store(losses + rows, m + tl.log(s) - picked, mask=rmask)


@triton.jit
def mean_of(losses, out, M, BLOCK: tl.constexpr):
    total = 0.0
    for k in range(0, M, BLOCK):
        i = k + tl.arange(0, BLOCK)
        total += tl.sum(tl.load(losses + i, mask=i < M, other=0.0), axis=0)
    tl.store(out, total / M)


def _grid(M: int, cfg: CEConfig) -> Tuple[int]:
    return (triton.cdiv(M, cfg.rows_per_program),)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    cfg = CEConfig()
    M, V = logits.shape
    losses = torch.empty(M, dtype=torch.float32, device=logits.device)
    ce_multi_row_kernel[_grid(M, cfg)](logits, targets, losses, M, V, logits.stride(0),
                                      ROWS=cfg.rows_per_program, BLOCK_V=cfg.block_v)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    mean_of[(1,)](losses, out, M, BLOCK=32)
    return out
