"""Baseline: out[t, :] = weight[indices[t], :], BLOCK_T tokens x BLOCK_D columns per step.

The design is chosen per shape from `CONFIGS` (see the launcher): rows (tokens) per program
and the column block; LOOP_D=0 spreads a row's column blocks over programs (a 2-D grid, each
program loads its tokens' indices), LOOP_D=1 has one program walk the whole row (indices
loaded once per token block, fewer programs for narrow tables); a persistent grid (PROGRAMS)
has a fixed number of programs walk the token blocks. ALIGN is the vector width the kernel
may assume of D and the row strides; the launcher lowers it to one they are all multiples of
(1 for odd row lengths: the unhinted path).
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_T": (1, 2, 4, 8, 16, 32),
    "BLOCK_D": (64, 128, 256, 512, 1024, 2048),
    "LOOP_D": (0, 1),  # 0: one program per column block; 1: one program walks the whole row
    "PROGRAMS": (0, 132, 264, 528, 1056, 2112),  # 0: one program per token block; else a persistent grid
    "ALIGN": (1, 2, 4, 8, 16),  # widest vector (elements) to assume; the launcher may lower it
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3),
}
DESIGN = ("LOOP_D", "PROGRAMS")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "narrow": (("BLOCK_T", 8), ("BLOCK_D", 512), ("LOOP_D", 0), ("PROGRAMS", 0), ("ALIGN", 8),
               ("num_warps", 4), ("num_stages", 1)),
    "medium": (("BLOCK_T", 8), ("BLOCK_D", 512), ("LOOP_D", 0), ("PROGRAMS", 0), ("ALIGN", 8),
               ("num_warps", 4), ("num_stages", 1)),
    "large": (("BLOCK_T", 8), ("BLOCK_D", 512), ("LOOP_D", 0), ("PROGRAMS", 0), ("ALIGN", 8),
              ("num_warps", 4), ("num_stages", 1)),
    "wide": (("BLOCK_T", 8), ("BLOCK_D", 512), ("LOOP_D", 0), ("PROGRAMS", 0), ("ALIGN", 8),
             ("num_warps", 4), ("num_stages", 1)),
}


@triton.jit
def _embedding_kernel(indices_ptr, weight_ptr, out_ptr,
                      T, D,
                      stride_w, stride_o,
                      BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr, ALIGN: tl.constexpr):
    # The launcher checked D and both strides are multiples of ALIGN: rounding them down
    # changes nothing but lets the compiler prove rows start aligned and masks hold per vector.
    D = D // ALIGN * ALIGN
    stride_w = stride_w // ALIGN * ALIGN
    stride_o = stride_o // ALIGN * ALIGN
    # Token blocks along axis 0 (every num_programs-th with a persistent grid); along axis 1,
    # each program copies every num_programs-th column block (all of them when there is one).
    for block in range(tl.program_id(axis=0), tl.cdiv(T, BLOCK_T), tl.num_programs(axis=0)):
        tokens = block * BLOCK_T + tl.arange(0, BLOCK_T)
        token_mask = tokens < T
        # Padded tokens read row 0, which is always in range, and are never stored.
        rows = tl.load(indices_ptr + tokens, mask=token_mask, other=0)
        src = weight_ptr + rows[:, None] * stride_w
        dst = out_ptr + tokens[:, None] * stride_o
        for start in range(tl.program_id(axis=1) * BLOCK_D, D, tl.num_programs(axis=1) * BLOCK_D):
            cols = start + tl.arange(0, BLOCK_D)
            mask = token_mask[:, None] & (cols[None, :] < D)
            # A copy has no identity; masked lanes are never stored.
            values = tl.load(src + cols[None, :], mask=mask, other=0.0)
            tl.store(dst + cols[None, :], values, mask=mask)


def _bucket(D: int) -> str:
    """Returns the CONFIGS bucket of table rows of D elements."""
    return "narrow" if D <= 256 else "medium" if D <= 1024 else "large" if D <= 2048 else "wide"


def _vector_width(widest: int, *sizes: int) -> int:
    """Returns the largest power of two up to `widest` dividing every size (1: unhinted)."""
    width = widest
    while width > 1 and any(size % width for size in sizes):
        width //= 2
    return width


def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    assert indices.ndim == 1 and indices.dtype == torch.int64, \
        f"expected 1-D int64 indices, got {indices.dtype} of shape {tuple(indices.shape)}"
    assert weight.ndim == 2, f"expected weight of shape [V, D], got {tuple(weight.shape)}"
    assert indices.is_contiguous() and weight.stride(1) == 1, "inputs must be contiguous"
    T = indices.shape[0]
    D = weight.shape[1]
    out = torch.empty((T, D), dtype=weight.dtype, device=weight.device)
    config = dict(CONFIGS[_bucket(D)])
    programs = triton.cdiv(T, config["BLOCK_T"])
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    column_programs = 1 if config["LOOP_D"] else triton.cdiv(D, config["BLOCK_D"])
    _embedding_kernel[(programs, column_programs)](
        indices, weight, out, T, D, weight.stride(0), out.stride(0),
        BLOCK_T=config["BLOCK_T"], BLOCK_D=config["BLOCK_D"],
        ALIGN=_vector_width(config["ALIGN"], D, weight.stride(0), out.stride(0)),
        num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
