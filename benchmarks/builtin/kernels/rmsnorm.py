"""Baseline: RMS norm over the last dim; BLOCK_M rows per step, each row whole or looped in chunks.

The design is chosen per shape from `CONFIGS` (see the launcher). LOOP=0 holds a whole row
in registers (one read, one write); LOOP=1 streams it in BLOCK_N chunks, the sum of squares
first, then the scaled write (two reads: rows too long for registers). BLOCK_M rows per
program keep the lanes busy on short rows; a persistent grid (PROGRAMS) has a fixed number
of programs walk the row blocks.
ALIGN is the vector width the kernel may assume of N and the row strides; the launcher
lowers it to one they are all multiples of (1 for odd rows or strides: the unhinted path).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (1, 2, 4, 8, 16, 32),
    "BLOCK_N": (64, 128, 256, 512, 1024, 2048, 4096),  # chunk width when LOOP=1
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
    "small": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("num_warps", 8), ("num_stages", 1)),
    "short": (("BLOCK_M", 8), ("BLOCK_N", 256), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("num_warps", 4), ("num_stages", 1)),
    "n1k": (("BLOCK_M", 2), ("BLOCK_N", 256), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 4), ("EVICT", 0),
            ("num_warps", 1), ("num_stages", 4)),
    "n2k": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8), ("EVICT", 0),
            ("num_warps", 8), ("num_stages", 1)),
    "n4k": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8), ("EVICT", 0),
            ("num_warps", 8), ("num_stages", 1)),
    "n8k": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8), ("EVICT", 0),
            ("num_warps", 8), ("num_stages", 1)),
    "n16k": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("LOOP", 1), ("PROGRAMS", 0), ("ALIGN", 8),
             ("EVICT", 0), ("num_warps", 8), ("num_stages", 1)),
    "long": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("LOOP", 0), ("PROGRAMS", 0), ("ALIGN", 8),
             ("EVICT", 0), ("num_warps", 8), ("num_stages", 1)),
}
MAX_BLOCK = 1 << 16
"""Most elements one BLOCK_M x BLOCK_N block may hold; a longer whole row is looped."""


@triton.jit
def _rmsnorm_kernel(x_ptr, weight_ptr, out_ptr,
                    M, N,
                    stride_x_row, stride_out_row,
                    eps,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, LOOP: tl.constexpr, ALIGN: tl.constexpr,
                    EVICTION: tl.constexpr):
    # The launcher checked N and both row strides are multiples of ALIGN: rounding them down
    # changes nothing but lets the compiler prove rows start aligned and masks hold per vector.
    N = N // ALIGN * ALIGN
    stride_x_row = stride_x_row // ALIGN * ALIGN
    stride_out_row = stride_out_row // ALIGN * ALIGN
    # With a persistent grid each program walks every num_programs-th row block.
    for block in range(tl.program_id(axis=0), tl.cdiv(M, BLOCK_M), tl.num_programs(axis=0)):
        rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = rows < M
        x_rows = x_ptr + rows[:, None] * stride_x_row
        out_rows = out_ptr + rows[:, None] * stride_out_row
        if LOOP:
            squares = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for start in range(0, N, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                mask = row_mask[:, None] & (cols[None, :] < N)
                # Pad with 0, the identity of the sum of squares.
                x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0,
                            eviction_policy=EVICTION).to(tl.float32)
                squares += x * x
            inv_rms = 1.0 / tl.sqrt(tl.sum(squares, axis=1) / N + eps)
            for start in range(0, N, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                mask = row_mask[:, None] & (cols[None, :] < N)
                x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0,
                            eviction_policy=EVICTION).to(tl.float32)
                weight = tl.load(weight_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
                out = x * inv_rms[:, None] * weight[None, :]
                tl.store(out_rows + cols[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)
        else:
            cols = tl.arange(0, BLOCK_N)
            mask = row_mask[:, None] & (cols[None, :] < N)
            # Pad with 0, the identity of the sum of squares.
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy=EVICTION).to(tl.float32)
            inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
            weight = tl.load(weight_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
            out = x * inv_rms[:, None] * weight[None, :]
            tl.store(out_rows + cols[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)


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


def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected x of shape [M, N], got {tuple(x.shape)}"
    M, N = x.shape
    assert weight.shape == (N,), f"weight shape {tuple(weight.shape)} != ({N},)"
    assert weight.dtype == x.dtype, f"dtype mismatch: {x.dtype} vs {weight.dtype}"
    assert x.stride(1) == 1 and weight.is_contiguous(), "rows of x and weight must be contiguous"
    out = torch.empty_like(x)
    config = dict(CONFIGS[_bucket(M, N)])
    # A whole row in one block reads it once; fewer rows per block when it is long, and a
    # loop when even one row does not fit.
    whole_row = triton.next_power_of_2(N)
    loop = config["LOOP"] or whole_row > MAX_BLOCK
    block_n = config["BLOCK_N"] if loop else whole_row
    block_m = config["BLOCK_M"] if loop else max(1, min(config["BLOCK_M"], MAX_BLOCK // whole_row))
    programs = triton.cdiv(M, block_m)
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    _rmsnorm_kernel[(programs,)](x, weight, out, M, N, x.stride(0), out.stride(0), 1e-6,
                                 BLOCK_M=block_m, BLOCK_N=block_n, LOOP=1 if loop else 0,
                                 ALIGN=_vector_width(config["ALIGN"], N, x.stride(0), out.stride(0)),
                                 EVICTION="evict_first" if config["EVICT"] else "",
                                 num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
