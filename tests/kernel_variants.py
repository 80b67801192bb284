"""Distinct, correct kernels for tests whose scripted LLM must answer with different code.

The built-in vector_add baseline reads its block size from a per-shape table; a variant sets
every bucket's block size. The setting is looked up, not assumed: if the baseline no longer
has it, the tests fail here instead of silently answering with the baseline itself.
"""

from __future__ import annotations

from benchmarks.builtin import common

VECTOR_ADD = common.baseline_source("vector_add")
_BLOCK_SETTING = '("BLOCK_SIZE", 1024)'


def vector_add_at(block: int) -> str:
    """Returns the vector_add baseline with BLOCK_SIZE `block` in every shape bucket."""
    if _BLOCK_SETTING not in VECTOR_ADD:
        raise AssertionError(f"the vector_add baseline no longer sets {_BLOCK_SETTING}")
    return VECTOR_ADD.replace(_BLOCK_SETTING, f'("BLOCK_SIZE", {block})')
