"""Baseline: out[j, i] = x[i, j], one BLOCK_M x BLOCK_N tile per step (the compiler reshuffles it).

The design is chosen per shape from `CONFIGS` (see the launcher): the tile, the order the
tiles are visited in (GROUP_M row-blocks of x walk down a column band together, so the rows
of out they write, x's columns, stay open in L2 and DRAM pages; GROUP_M=1 is row-major), and
a persistent grid (PROGRAMS: a fixed number of programs walk the tiles in that order). ALIGN
is the vector width the kernel may assume of M, N and the row strides; the launcher lowers it
to one they are all multiples of (1 for odd sizes: the unhinted path).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_M": (16, 32, 64, 128, 256),
    "BLOCK_N": (16, 32, 64, 128, 256),
    "GROUP_M": (1, 2, 4, 8, 16, 32),
    "PROGRAMS": (0, 132, 264, 528, 1056, 2112),  # 0: one program per tile; else a persistent grid
    "ALIGN": (1, 2, 4, 8, 16),  # widest vector (elements) to assume; the launcher may lower it
    "EVICT": (0, 1),  # 1: the input's loads ask the cache to evict it first (it is read once)
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3),
}
DESIGN = ("PROGRAMS",)
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "small": (("BLOCK_M", 64), ("BLOCK_N", 64), ("GROUP_M", 1), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("num_warps", 4), ("num_stages", 1)),
    "skinny": (("BLOCK_M", 128), ("BLOCK_N", 16), ("GROUP_M", 1), ("PROGRAMS", 0), ("ALIGN", 4),
               ("EVICT", 0), ("num_warps", 1), ("num_stages", 1)),
    "unaligned": (("BLOCK_M", 256), ("BLOCK_N", 32), ("GROUP_M", 32), ("PROGRAMS", 0), ("ALIGN", 1),
                  ("EVICT", 0), ("num_warps", 4), ("num_stages", 3)),
    "large": (("BLOCK_M", 64), ("BLOCK_N", 64), ("GROUP_M", 1), ("PROGRAMS", 0), ("ALIGN", 8),
              ("EVICT", 0), ("num_warps", 4), ("num_stages", 1)),
}


@triton.jit
def _transpose_kernel(x_ptr, out_ptr,
                      M, N,
                      stride_xm, stride_xn,
                      stride_on, stride_om,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
                      ALIGN: tl.constexpr,
                      EVICTION: tl.constexpr):
    # The launcher checked M, N and both row strides are multiples of ALIGN: rounding them down
    # changes nothing but lets the compiler prove rows start aligned and masks hold per vector.
    M = M // ALIGN * ALIGN
    N = N // ALIGN * ALIGN
    stride_xm = stride_xm // ALIGN * ALIGN
    stride_on = stride_on // ALIGN * ALIGN
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_in_group = GROUP_M * tiles_n
    # With a persistent grid each program walks every num_programs-th tile.
    for tile in range(tl.program_id(axis=0), tiles_m * tiles_n, tl.num_programs(axis=0)):
        # Grouped order: consecutive tiles go down GROUP_M row-blocks before moving right.
        first_m = (tile // tiles_in_group) * GROUP_M
        group_size = tl.minimum(tiles_m - first_m, GROUP_M)
        tile_m = first_m + (tile % tiles_in_group) % group_size
        tile_n = (tile % tiles_in_group) // group_size
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        # A copy has no identity; masked lanes are never stored.
        values = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0,
                         eviction_policy=EVICTION)
        tl.store(out_ptr + cols[None, :] * stride_on + rows[:, None] * stride_om, values, mask=mask)


def _bucket(M: int, N: int) -> str:
    """Returns the CONFIGS bucket of an M x N input: small (latency-bound), skinny (one side
    fits a tile or two), a side not a multiple of 8 (no vector loads or stores), or large."""
    if M * N <= 1 << 21:
        return "small"
    return "skinny" if min(M, N) <= 128 else "unaligned" if M % 8 or N % 8 else "large"


def _vector_width(widest: int, *sizes: int) -> int:
    """Returns the largest power of two up to `widest` dividing every size (1: unhinted)."""
    width = widest
    while width > 1 and any(size % width for size in sizes):
        width //= 2
    return width


def transpose(x: torch.Tensor) -> torch.Tensor:
    assert x.ndim == 2, f"expected a 2-D tensor, got shape {tuple(x.shape)}"
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    config = dict(CONFIGS[_bucket(M, N)])
    programs = triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"])
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    _transpose_kernel[(programs,)](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                                   BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"],
                                   GROUP_M=config["GROUP_M"],
                                   ALIGN=_vector_width(config["ALIGN"], M, N, x.stride(0), out.stride(0)),
                                   EVICTION="evict_first" if config["EVICT"] else "",
                                   num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
