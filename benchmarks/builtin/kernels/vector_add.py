"""Baseline: elementwise out = x + y, BLOCK_SIZE elements per step.

The design is chosen per shape from `CONFIGS` (see the launcher): the block (with num_warps,
how many elements each thread holds: BLOCK_SIZE / (32 * num_warps), loaded as vectors of up
to 16 bytes), a persistent grid (PROGRAMS: a fixed number of programs walk the blocks,
grid-stride) instead of one program per block, and how the tail is masked. A length that is
not a multiple of 16 leaves the compiler unable to prove any vector of the mask constant, so
every load falls back to one element per instruction; with UNMASKED_BODY=1 the whole blocks
are bounded by a multiple of BLOCK_SIZE (full-width vectors) and only the last block uses
the exact length.
"""

import torch
import triton
import triton.language as tl

KNOBS = {
    "BLOCK_SIZE": (256, 512, 1024, 2048, 4096, 8192, 16384),
    "PROGRAMS": (0, 132, 264, 528, 1056, 2112),  # 0: one program per block; else a persistent grid
    "UNMASKED_BODY": (0, 1),  # 1: whole blocks bounded by a multiple of BLOCK_SIZE; 0: all by n
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3),
}
DESIGN = ("PROGRAMS", "UNMASKED_BODY")
CONFIGS = {
    # shape bucket (`_bucket`): one setting of every knob, read by the launcher
    "small": (("BLOCK_SIZE", 1024), ("PROGRAMS", 0), ("UNMASKED_BODY", 1),
              ("num_warps", 4), ("num_stages", 1)),
    "large": (("BLOCK_SIZE", 1024), ("PROGRAMS", 0), ("UNMASKED_BODY", 1),
              ("num_warps", 4), ("num_stages", 1)),
}


@triton.jit
def _add_block(x_ptr, y_ptr, out_ptr, offsets, bound):
    mask = offsets < bound
    # Add in fp32 and round once on the store: exact for fp32, one rounding for bf16.
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr,
                n_elements,
                BLOCK_SIZE: tl.constexpr, UNMASKED_BODY: tl.constexpr):
    whole_blocks = n_elements // BLOCK_SIZE
    # With a persistent grid each program walks every num_programs-th block.
    for block in range(tl.program_id(axis=0), tl.cdiv(n_elements, BLOCK_SIZE), tl.num_programs(axis=0)):
        offsets = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        if UNMASKED_BODY and block < whole_blocks:
            # A bound the compiler sees is a multiple of BLOCK_SIZE: the mask (all true here)
            # is constant over every vector, so loads and stores are full width.
            _add_block(x_ptr, y_ptr, out_ptr, offsets, whole_blocks * BLOCK_SIZE)
        else:
            _add_block(x_ptr, y_ptr, out_ptr, offsets, n_elements)


def _bucket(n: int) -> str:
    """Returns the CONFIGS bucket of a vector of n elements (small: the launch is latency-bound)."""
    return "small" if n <= 1 << 20 else "large"


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    assert x.shape == y.shape, f"shape mismatch: {tuple(x.shape)} vs {tuple(y.shape)}"
    assert x.dtype == y.dtype, f"dtype mismatch: {x.dtype} vs {y.dtype}"
    assert x.is_contiguous() and y.is_contiguous(), "inputs must be contiguous"
    out = torch.empty_like(x)
    n_elements = out.numel()
    config = dict(CONFIGS[_bucket(n_elements)])
    programs = triton.cdiv(n_elements, config["BLOCK_SIZE"])
    if config["PROGRAMS"]:
        programs = min(programs, config["PROGRAMS"])
    _add_kernel[(programs,)](x, y, out, n_elements,
                             BLOCK_SIZE=config["BLOCK_SIZE"], UNMASKED_BODY=config["UNMASKED_BODY"],
                             num_warps=config["num_warps"], num_stages=config["num_stages"])
    return out
