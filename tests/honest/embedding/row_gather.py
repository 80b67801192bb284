import torch
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(idx_ptr, weight_ptr, out_ptr, D, stride_w, stride_o, BLOCK_D: tl.constexpr):
    token = tl.program_id(0)
    row = tl.load(idx_ptr + token)
    for d0 in range(0, D, BLOCK_D):
        cols = d0 + tl.arange(0, BLOCK_D)
        mask = cols < D
        vec = tl.load(weight_ptr + row * stride_w + cols, mask=mask)
        tl.store(out_ptr + token * stride_o + cols, vec, mask=mask)


def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    assert indices.dtype in (torch.int32, torch.int64), f"indices must be integer, got {indices.dtype}"
    indices = indices.contiguous()
    weight = weight.contiguous()
    T = indices.numel()
    V, D = weight.shape
    out = torch.empty((T, D), dtype=weight.dtype, device=weight.device)
    embedding_kernel[(T,)](indices, weight, out, D, weight.stride(0), out.stride(0), BLOCK_D=128)
    return out
