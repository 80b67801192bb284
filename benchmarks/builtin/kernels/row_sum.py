"""Baseline: out[i] = sum_j x[i, j]; BLOCK_M rows per step, looping over the row in BLOCK_N chunks.

The design is chosen per shape from `CONFIGS` (see the launcher): how many rows a program
takes at once (short rows need many, or most lanes idle), whether the chunks are summed into
a lane-wise 2-D accumulator reduced once or reduced chunk by chunk into one value per row
(fewer registers on long rows), and whether a fixed number of programs walks the row blocks
(a persistent grid) instead of one program per block, and whether loads ask the cache to
evict the input first (each element is read once: keeping it only crowds out the next rows).
ALIGN is the vector width the kernel may assume of N and the row stride; the launcher
lowers it to one they are all multiples of (1 for odd rows or strides: the unhinted path).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (1, 2, 4, 8, 16, 32, 64),
    "BLOCK_N": (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
    "ACC_2D": (0, 1),  # 1: [BLOCK_M, BLOCK_N] fp32 accumulator reduced once; 0: reduced per chunk
    "PROGRAMS": (0, 132, 264, 528, 1056, 2112),  # 0: one program per row block; else a persistent grid
    "ALIGN": (1, 2, 4, 8, 16),  # widest vector (elements) to assume; the launcher may lower it
    "EVICT": (0, 1),  # 1: the input's loads ask the cache to evict it first (it is read once)
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3, 4),
}
DESIGN = ("ACC_2D", "PROGRAMS")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "small": (("BLOCK_M", 4), ("BLOCK_N", 512), ("ACC_2D", 1), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("num_warps", 4), ("num_stages", 2)),
    "short": (("BLOCK_M", 32), ("BLOCK_N", 64), ("ACC_2D", 1), ("PROGRAMS", 0), ("ALIGN", 1),
              ("EVICT", 1), ("num_warps", 16), ("num_stages", 4)),
    "n1k": (("BLOCK_M", 4), ("BLOCK_N", 512), ("ACC_2D", 1), ("PROGRAMS", 0), ("ALIGN", 8),
            ("EVICT", 0), ("num_warps", 4), ("num_stages", 2)),
    "n2k": (("BLOCK_M", 4), ("BLOCK_N", 512), ("ACC_2D", 1), ("PROGRAMS", 0), ("ALIGN", 8),
            ("EVICT", 0), ("num_warps", 4), ("num_stages", 2)),
    "n4k": (("BLOCK_M", 1), ("BLOCK_N", 4096), ("ACC_2D", 1), ("PROGRAMS", 0), ("ALIGN", 8),
            ("EVICT", 1), ("num_warps", 16), ("num_stages", 2)),
    "n8k": (("BLOCK_M", 1), ("BLOCK_N", 4096), ("ACC_2D", 0), ("PROGRAMS", 2112), ("ALIGN", 16),
            ("EVICT", 1), ("num_warps", 4), ("num_stages", 1)),
    "n16k": (("BLOCK_M", 4), ("BLOCK_N", 512), ("ACC_2D", 1), ("PROGRAMS", 0), ("ALIGN", 8),
             ("EVICT", 0), ("num_warps", 4), ("num_stages", 2)),
    "long": (("BLOCK_M", 2), ("BLOCK_N", 4096), ("ACC_2D", 0), ("PROGRAMS", 2112), ("ALIGN", 2),
             ("EVICT", 1), ("num_warps", 4), ("num_stages", 2)),
}


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr,
                    M, N,
                    stride_xm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ACC_2D: tl.constexpr, ALIGN: tl.constexpr,
                    EVICTION: tl.constexpr):
    # The launcher checked N and the row stride are multiples of ALIGN: rounding them down
    # changes nothing but lets the compiler prove rows start aligned and masks hold per vector.
    N = N // ALIGN * ALIGN
    stride_xm = stride_xm // ALIGN * ALIGN
    # With a persistent grid each program walks every num_programs-th row block.
    for block in range(tl.program_id(axis=0), tl.cdiv(M, BLOCK_M), tl.num_programs(axis=0)):
        rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = rows < M
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        row_acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
        for start in range(0, N, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols[None, :] < N)
            # Pad with 0, the identity of +.
            x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0,
                        eviction_policy=EVICTION)
            if ACC_2D:
                acc += x.to(tl.float32)
            else:
                row_acc += tl.sum(x.to(tl.float32), axis=1)
        if ACC_2D:
            row_acc = tl.sum(acc, axis=1)
        tl.store(out_ptr + rows, row_acc.to(out_ptr.dtype.element_ty), mask=row_mask)


def _bucket(M: int, N: int) -> str:
    """Returns the CONFIGS bucket of M rows of N elements: a small input (latency-bound: few
    waves of programs), else the row length's class, which sets the block and warps that fit."""
    if M * N <= 1 << 21:
        return "small"
    return ("short" if N <= 256 else "n1k" if N <= 1024 else "n2k" if N <= 2048 else "n4k" if N <= 4096
            else "n8k" if N <= 8192 else "n16k" if N <= 16384 else "long")


def _vector_width(widest: int, *sizes: int) -> int:
    """Returns the largest power of two up to `widest` dividing every size (1: unhinted)."""
    width = widest
    while width > 1 and any(size % width for size in sizes):
        width //= 2
    return width


def row_sum(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    assert x.stride(1) == 1, "rows must be contiguous"
    M, N = x.shape
    out = torch.empty((M,), dtype=x.dtype, device=x.device)
    config = dict(CONFIGS[_bucket(M, N)])
    programs = triton.cdiv(M, config["BLOCK_M"])
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    _row_sum_kernel[(programs,)](x, out, M, N, x.stride(0),
                                 BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"],
                                 ACC_2D=config["ACC_2D"],
                                 ALIGN=_vector_width(config["ALIGN"], N, x.stride(0)),
                                 EVICTION="evict_first" if config["EVICT"] else "",
                                 num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
