"""Baseline: out[t, :] = weight[indices[t], :], BLOCK_T tokens x BLOCK_D columns per program."""

import torch
import triton
import triton.language as tl


@triton.jit
def _embedding_kernel(indices_ptr, weight_ptr, out_ptr,
                      T, D,
                      stride_w, stride_o,
                      BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    tokens = tl.program_id(axis=0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(axis=1) * BLOCK_D + tl.arange(0, BLOCK_D)
    token_mask = tokens < T
    mask = token_mask[:, None] & (cols[None, :] < D)
    # Padded tokens read row 0, which is always in range, and are never stored.
    rows = tl.load(indices_ptr + tokens, mask=token_mask, other=0)
    values = tl.load(weight_ptr + rows[:, None] * stride_w + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + tokens[:, None] * stride_o + cols[None, :], values, mask=mask)


def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    assert indices.ndim == 1 and indices.dtype == torch.int64, \
        f"expected 1-D int64 indices, got {indices.dtype} of shape {tuple(indices.shape)}"
    assert weight.ndim == 2, f"expected weight of shape [V, D], got {tuple(weight.shape)}"
    assert indices.is_contiguous() and weight.stride(1) == 1, "inputs must be contiguous"
    T = indices.shape[0]
    D = weight.shape[1]
    out = torch.empty((T, D), dtype=weight.dtype, device=weight.device)
    grid = lambda meta: (triton.cdiv(T, meta["BLOCK_T"]), triton.cdiv(D, meta["BLOCK_D"]))
    _embedding_kernel[grid](indices, weight, out, T, D, weight.stride(0), out.stride(0),
                            BLOCK_T=8, BLOCK_D=512, num_warps=4, num_stages=1)
    return out
