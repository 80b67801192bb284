from typing import Optional

import torch
import triton
import triton.language as tl


@triton.jit
def lookup_kernel(input_ptr, weight_ptr, out_ptr, num_tokens, dim, TOKENS: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0) * TOKENS
    cols = tl.arange(0, BLOCK)
    for i in range(TOKENS):
        tok = start + i
        if tok < num_tokens:
            row = tl.load(input_ptr + tok)
            for c0 in range(0, dim, BLOCK):
                c = c0 + cols
                m = c < dim
                tl.store(out_ptr + tok * dim + c, tl.load(weight_ptr + row * dim + c, mask=m), mask=m)


def embedding_lookup(input: torch.Tensor, weight: torch.Tensor, padding_idx: Optional[int] = None) -> torch.Tensor:
    num_tokens = input.numel()
    dim = weight.shape[-1]
    out = torch.empty((num_tokens, dim), dtype=weight.dtype, device=weight.device)
    TOKENS = 4
    lookup_kernel[(triton.cdiv(num_tokens, TOKENS),)](input, weight, out, num_tokens, dim,
                                                     TOKENS=TOKENS, BLOCK=128)
    return out


def embedding(indices, weight):
    return embedding_lookup(indices, weight)


if __name__ == "__main__":
    import time

    w = torch.randn(1000, 300, device="cuda")
    ids = torch.randint(0, 1000, (17,), device="cuda")
    t0 = time.perf_counter()
    res = embedding(ids, w)
    print("match:", torch.allclose(res, w[ids]), "elapsed:", time.perf_counter() - t0)
