import torch
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(X, Y, Out, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    m = idx < N
    s = tl.load(X + idx, mask=m, other=0.0).to(tl.float32) + tl.load(Y + idx, mask=m, other=0.0).to(tl.float32)
    tl.store(Out + idx, s.to(Out.dtype.element_ty), mask=m)


def vector_add(x, y):
    out = torch.empty_like(x)
    N = x.numel()
    BLOCK = 256
    vector_add_kernel[(triton.cdiv(N, BLOCK),)](x, y, out, N, BLOCK=BLOCK, num_warps=2)
    return out


def test_vector_add():
    torch.manual_seed(0)
    a = torch.randn(4097, device="cuda")
    b = torch.randn(4097, device="cuda")
    torch.testing.assert_close(vector_add(a, b), a + b)


def benchmark_vector_add(size=1 << 24):
    a = torch.randn(size, device="cuda")
    b = torch.randn(size, device="cuda")
    return triton.testing.do_bench(lambda: vector_add(a, b))


if __name__ == "__main__":
    import time

    torch.manual_seed(0)
    for size in (1, 1000, 98432):
        a = torch.randn(size, device="cuda")
        b = torch.randn(size, device="cuda")
        start = time.time()
        c = vector_add(a, b)
        torch.cuda.synchronize()
        print(f"size={size} ok={torch.allclose(c, a + b)} time={time.time() - start:.4f}s")
