"""Baseline: mean cross-entropy; BLOCK_M rows per step (a log-sum-exp each), then one mean program.

The design is chosen per shape from `CONFIGS` (see the launcher). LOOP=0 holds whole rows
in registers (short vocabularies: one read, BLOCK_M rows per program so the lanes stay busy);
LOOP=1 streams each row in BLOCK_V chunks with an online log-sum-exp (a running max and a
sum rescaled when the max grows: vocabularies too long for registers). A persistent grid
(PROGRAMS) has a fixed number of programs walk the row blocks. ALIGN is the vector width the
kernel may assume of V and the row stride; the launcher lowers it to one both are multiples
of (1 for an odd vocabulary: the unhinted path).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (1, 2, 4, 8, 16),
    "BLOCK_V": (256, 512, 1024, 2048, 4096),  # chunk width when LOOP=1
    "LOOP": (0, 1),
    "PROGRAMS": (0, 132, 264, 528, 1056, 2112),  # 0: one program per row block; else a persistent grid
    "ALIGN": (1, 2, 4, 8, 16),  # widest vector (elements) to assume; the launcher may lower it
    "EVICT": (0, 1),  # 1: the input's loads ask the cache to evict it first (it is read once)
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3, 4),
}
DESIGN = ("LOOP", "PROGRAMS")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "short": (("BLOCK_M", 4), ("BLOCK_V", 1024), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("num_warps", 4), ("num_stages", 1)),
    "medium": (("BLOCK_M", 1), ("BLOCK_V", 1024), ("LOOP", 1), ("PROGRAMS", 0), ("ALIGN", 8),
               ("EVICT", 1), ("num_warps", 1), ("num_stages", 4)),
    "wide": (("BLOCK_M", 1), ("BLOCK_V", 4096), ("LOOP", 1), ("PROGRAMS", 0), ("ALIGN", 8),
             ("EVICT", 0), ("num_warps", 8), ("num_stages", 4)),
    "long": (("BLOCK_M", 1), ("BLOCK_V", 4096), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 16),
             ("EVICT", 0), ("num_warps", 4), ("num_stages", 3)),
}
MAX_BLOCK = 1 << 16
"""Most elements one BLOCK_M x row block may hold; a longer whole row is looped."""


@triton.jit
def _row_loss_kernel(logits_ptr, targets_ptr, losses_ptr,
                     M, V,
                     stride_row,
                     BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr, LOOP: tl.constexpr,
                     ALIGN: tl.constexpr,
                     EVICTION: tl.constexpr):
    # The launcher checked V and the stride are multiples of ALIGN: rounding them down changes
    # nothing but lets the compiler prove rows start aligned and masks hold per vector.
    V = V // ALIGN * ALIGN
    stride_row = stride_row // ALIGN * ALIGN
    # With a persistent grid each program walks every num_programs-th row block.
    for block in range(tl.program_id(axis=0), tl.cdiv(M, BLOCK_M), tl.num_programs(axis=0)):
        rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
        # Padded rows re-read the last row (always in range, never stored): no row is all -inf.
        safe_rows = tl.minimum(rows, M - 1)
        row_ptrs = logits_ptr + safe_rows[:, None] * stride_row
        if LOOP:
            # Online log-sum-exp: a running max and a sum of exponentials rescaled when it grows.
            running_max = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
            running_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
            for start in range(0, V, BLOCK_V):
                cols = start + tl.arange(0, BLOCK_V)
                # Pad with -inf, the identity of max; exp(-inf) = 0 adds nothing to the sum.
                x = tl.load(row_ptrs + cols[None, :], mask=cols[None, :] < V, other=-float("inf"),
                            eviction_policy=EVICTION).to(tl.float32)
                new_max = tl.maximum(running_max, tl.max(x, axis=1))
                running_sum = running_sum * tl.exp(running_max - new_max) + \
                    tl.sum(tl.exp(x - new_max[:, None]), axis=1)
                running_max = new_max
        else:
            cols = tl.arange(0, BLOCK_V)
            x = tl.load(row_ptrs + cols[None, :], mask=cols[None, :] < V, other=-float("inf"),
                        eviction_policy=EVICTION).to(tl.float32)
            running_max = tl.max(x, axis=1)
            running_sum = tl.sum(tl.exp(x - running_max[:, None]), axis=1)
        # Gathers within range: safe_rows < M, and targets lie in [0, V) by contract.
        targets = tl.load(targets_ptr + safe_rows)
        target_logit = tl.load(logits_ptr + safe_rows * stride_row + targets).to(tl.float32)
        tl.store(losses_ptr + rows, tl.log(running_sum) + running_max - target_logit, mask=rows < M)


@triton.jit
def _mean_kernel(values_ptr, out_ptr,
                 n_values,
                 BLOCK_SIZE: tl.constexpr):
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_values, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(values_ptr + offsets, mask=offsets < n_values, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_values)


def _bucket(V: int) -> str:
    """Returns the CONFIGS bucket of rows of V logits."""
    return "short" if V <= 4096 else "medium" if V <= 32768 else "wide" if V <= 65536 else "long"


def _vector_width(widest: int, *sizes: int) -> int:
    """Returns the largest power of two up to `widest` dividing every size (1: unhinted)."""
    width = widest
    while width > 1 and any(size % width for size in sizes):
        width //= 2
    return width


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    assert logits.ndim == 2, f"expected logits of shape [M, V], got {tuple(logits.shape)}"
    M, V = logits.shape
    assert targets.shape == (M,), f"targets shape {tuple(targets.shape)} != ({M},)"
    assert targets.dtype == torch.int64, f"targets must be int64, got {targets.dtype}"
    assert logits.stride(1) == 1 and targets.is_contiguous(), "inputs must be contiguous"
    losses = torch.empty((M,), dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    config = dict(CONFIGS[_bucket(V)])
    # A whole row in one block reads it once; fewer rows per block when it is long, and a
    # loop when even one row does not fit.
    whole_row = triton.next_power_of_2(V)
    loop = config["LOOP"] or whole_row > MAX_BLOCK
    block_v = config["BLOCK_V"] if loop else whole_row
    block_m = config["BLOCK_M"] if loop else max(1, min(config["BLOCK_M"], MAX_BLOCK // whole_row))
    programs = triton.cdiv(M, block_m)
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    _row_loss_kernel[(programs,)](logits, targets, losses, M, V, logits.stride(0),
                                  BLOCK_M=block_m, BLOCK_V=block_v, LOOP=1 if loop else 0,
                                  ALIGN=_vector_width(config["ALIGN"], V, logits.stride(0)),
                                  EVICTION="evict_first" if config["EVICT"] else "",
                                  num_warps=config["num_warps"], num_stages=config["num_stages"])
    _mean_kernel[(1,)](losses, out, M, BLOCK_SIZE=1024, num_warps=4, num_stages=1)
    return out
