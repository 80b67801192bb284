"""Every one-shot exemplar is a correct kernel: run (trusted, in-process) under the interpreter."""

import importlib.util
import math

import pytest
import torch

from operators import retrieval


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# name -> (inputs, reference); sizes are non-powers of two and span several blocks.
CASES = {
    "relu": ((randn(1500),), torch.relu),
    "scale_shift": ((randn(1100), 1.5, -0.25), lambda x, s, b: x * s + b),
    "gelu_tanh": ((randn(1500) * 4,), lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    "bias_relu_2d": ((randn(40, 70), randn(70, seed=1)), lambda x, b: torch.relu(x + b)),
    "row_max": ((randn(5, 300),), lambda x: x.max(dim=1).values),
    "col_sum": ((randn(37, 70),), lambda x: x.sum(dim=0)),
    "log_softmax_rows": ((randn(4, 100) * 3,), lambda x: torch.log_softmax(x, dim=1)),
    "online_softmax": ((randn(3, 300) * 3,), lambda x: torch.softmax(x, dim=1)),
    "rms_norm_rows": ((randn(3, 300), randn(300, seed=1), 1e-6),
                      lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps) * w),
    "matmul_tiled": ((randn(40, 50), randn(50, 70, seed=1)), torch.matmul),
    "cumsum_rows": ((randn(3, 300),), lambda x: torch.cumsum(x, dim=1)),
    "gather_rows": ((randn(10, 150), torch.tensor([3, 0, 9, 3, 7])), lambda t, i: t[i]),
    "transpose_2d": ((randn(50, 40)[:, ::2],), lambda x: x.t().contiguous()),
    "attention_block": ((randn(20, 24), randn(35, 24, seed=1), randn(35, 24, seed=2)),
                        lambda q, k, v: torch.softmax(q @ k.t() / math.sqrt(q.shape[1]), dim=1) @ v),
    "total_sum": ((randn(5000),), lambda x: x.sum()),
}


def load_entry(exemplar):
    spec = importlib.util.spec_from_file_location(f"exemplar_{exemplar.name}", exemplar.path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, exemplar.name)


def test_every_exemplar_has_a_case():
    assert sorted(e.name for e in retrieval.load_exemplars()) == sorted(CASES)


@pytest.mark.parametrize("exemplar", retrieval.load_exemplars(), ids=lambda e: e.name)
def test_exemplar_matches_its_reference(exemplar):
    inputs, reference = CASES[exemplar.name]
    got = load_entry(exemplar)(*inputs)
    torch.testing.assert_close(got, reference(*inputs), atol=1e-4, rtol=1e-4)
