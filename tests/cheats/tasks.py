"""Tiny tasks for the fitness tests: a row softmax (a reduction, unlike vector_add)."""

import pathlib

import torch

from evo.records import Case, Task

_BASELINES = pathlib.Path(__file__).parent / "baselines"


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def softmax_inputs(params, seed, device):
    gen = torch.Generator(device=torch.device(device))
    gen.manual_seed(int(seed))
    x = torch.randn((params["M"], params["N"]), generator=gen, device=device) * 3
    return (x.to(getattr(torch, params["dtype"])),)


def softmax_flops(params):
    return 5.0 * params["M"] * params["N"]  # max, sub, exp, sum, div per element


def softmax_bytes(params):
    return 2.0 * params["M"] * params["N"] * 4  # read x, write out (fp32)


_CASES = (
    Case("3x5 fp32", {"M": 3, "N": 5, "dtype": "float32"}),
    Case("7x33 fp32", {"M": 7, "N": 33, "dtype": "float32"}),
    Case("4x130 fp32", {"M": 4, "N": 130, "dtype": "float32"}),
)

ROW_SOFTMAX = Task(
    name="row_softmax",
    suite="test",
    instruction="Write `row_softmax(x) -> out`: softmax over the last dim of a 2-D fp32 tensor.",
    reference=softmax_reference,
    baseline_source=(_BASELINES / "row_softmax.py").read_text(),
    entry_point="row_softmax",
    make_inputs=softmax_inputs,
    cases=_CASES,
    interpreter_cases=_CASES,
    tolerance={"float32": (1e-5, 1e-5)},
    flops=softmax_flops,
    bytes=softmax_bytes,
    difficulty=2,
    tags=("reduction",),
    dtypes=("float32",),
)
