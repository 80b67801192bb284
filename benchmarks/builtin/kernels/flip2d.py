"""Baseline: out[i, j] = x[M-1-i, N-1-j], one BLOCK_M x BLOCK_N output tile per step.

The design is chosen per shape from `CONFIGS` (see the launcher). REVERSE=0 loads each
output tile straight from the mirrored addresses: they run backwards, so the compiler loads
one element per instruction. REVERSE=1 loads the mirrored source tile forwards (vector
loads) and reverses its columns in registers (tl.gather with reversed column indices). A
persistent grid (PROGRAMS) has a fixed number of programs walk the tiles in row-major order.
FLAT=1 uses that a flip of both axes of a contiguous tensor reverses it end to end: the tensor
is one row of M*N elements, in blocks of BLOCK_M * BLOCK_N, so no lane idles past a short row
(a padded input keeps the tiles).
ALIGN is the vector width the kernel may assume of N and the row strides; the launcher lowers
it to one they are all multiples of (1 for odd widths: the unhinted path).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (1, 2, 4, 8, 16, 32, 64),
    "BLOCK_N": (64, 128, 256, 512, 1024),
    "REVERSE": (0, 1),  # 0: load at mirrored (descending) addresses; 1: load forwards, reverse in registers
    "PROGRAMS": (0, 132, 264, 528, 1056, 2112),  # 0: one program per tile; else a persistent grid
    "ALIGN": (1, 2, 4, 8, 16),  # widest vector (elements) to assume; the launcher may lower it
    "EVICT": (0, 1),  # 1: the input's loads ask the cache to evict it first (it is read once)
    "FLAT": (0, 1),  # 1: a contiguous input reversed end to end, as one row
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3),
}
DESIGN = ("REVERSE", "PROGRAMS", "FLAT")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "small": (("BLOCK_M", 16), ("BLOCK_N", 256), ("REVERSE", 0), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("FLAT", 0), ("num_warps", 4), ("num_stages", 1)),
    "narrow": (("BLOCK_M", 8), ("BLOCK_N", 128), ("REVERSE", 0), ("PROGRAMS", 0), ("ALIGN", 8),
               ("EVICT", 1), ("FLAT", 1), ("num_warps", 2), ("num_stages", 3)),
    "unaligned": (("BLOCK_M", 1), ("BLOCK_N", 1024), ("REVERSE", 0), ("PROGRAMS", 0), ("ALIGN", 4),
                  ("EVICT", 1), ("FLAT", 1), ("num_warps", 1), ("num_stages", 2)),
    "wide": (("BLOCK_M", 4), ("BLOCK_N", 512), ("REVERSE", 1), ("PROGRAMS", 0), ("ALIGN", 1),
             ("EVICT", 0), ("FLAT", 0), ("num_warps", 2), ("num_stages", 2)),
}


@triton.jit
def _flip2d_kernel(x_ptr, out_ptr,
                   M, N,
                   stride_xm, stride_om,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, REVERSE: tl.constexpr,
                   ALIGN: tl.constexpr,
                   EVICTION: tl.constexpr):
    # The launcher checked N and both strides are multiples of ALIGN: rounding them down
    # changes nothing but lets the compiler prove rows start aligned and masks hold per vector.
    N = N // ALIGN * ALIGN
    stride_xm = stride_xm // ALIGN * ALIGN
    stride_om = stride_om // ALIGN * ALIGN
    tiles_n = tl.cdiv(N, BLOCK_N)
    # With a persistent grid each program walks every num_programs-th tile.
    for tile in range(tl.program_id(axis=0), tl.cdiv(M, BLOCK_M) * tiles_n, tl.num_programs(axis=0)):
        rows = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        src_rows = M - 1 - rows
        # A copy has no identity, 0 is as good as any; masked lanes are never stored.
        if REVERSE:
            # Source column N - 1 - cols[j] is first_col + (BLOCK_N - 1 - j): the forward tile
            # from first_col, flipped. Columns below 0 pad exactly the output columns >= N.
            src_cols = N - (tile % tiles_n + 1) * BLOCK_N + tl.arange(0, BLOCK_N)
            src_mask = (rows[:, None] < M) & (src_cols[None, :] >= 0)
            forward = tl.load(x_ptr + src_rows[:, None] * stride_xm + src_cols[None, :], mask=src_mask,
                              other=0.0, eviction_policy=EVICTION)
            reversed_cols = tl.broadcast_to(BLOCK_N - 1 - tl.arange(0, BLOCK_N)[None, :], (BLOCK_M, BLOCK_N))
            values = tl.gather(forward, reversed_cols, 1)
        else:
            src_cols = N - 1 - cols
            values = tl.load(x_ptr + src_rows[:, None] * stride_xm + src_cols[None, :], mask=mask, other=0.0,
                             eviction_policy=EVICTION)
        tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], values, mask=mask)


def _bucket(M: int, N: int) -> str:
    """Returns the CONFIGS bucket of an M x N input: small (latency-bound), narrow rows (up to
    256), rows whose length is not a multiple of 8 (no vector loads), or wide."""
    if M * N <= 1 << 21:
        return "small"
    return "narrow" if N <= 256 else "unaligned" if N % 8 else "wide"


def _vector_width(widest: int, *sizes: int) -> int:
    """Returns the largest power of two up to `widest` dividing every size (1: unhinted)."""
    width = widest
    while width > 1 and any(size % width for size in sizes):
        width //= 2
    return width


def flip2d(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    assert x.stride(1) == 1, "rows must be contiguous"
    M, N = x.shape
    out = torch.empty_like(x)
    config = dict(CONFIGS[_bucket(M, N)])
    block_m, block_n, stride_x, stride_out = config["BLOCK_M"], config["BLOCK_N"], x.stride(0), out.stride(0)
    if config["FLAT"] and x.is_contiguous():
        M, N, block_m, block_n = 1, M * N, 1, block_m * block_n
        stride_x = stride_out = N  # one row: never stepped over, but kept a multiple of ALIGN
    programs = triton.cdiv(M, block_m) * triton.cdiv(N, block_n)
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    _flip2d_kernel[(programs,)](x, out, M, N, stride_x, stride_out,
                                BLOCK_M=block_m, BLOCK_N=block_n,
                                REVERSE=config["REVERSE"],
                                ALIGN=_vector_width(config["ALIGN"], N, stride_x, stride_out),
                                EVICTION="evict_first" if config["EVICT"] else "",
                                num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
