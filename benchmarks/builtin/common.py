"""Helpers shared by the built-in task modules: seeded inputs, dtypes, tolerances, baselines."""

import pathlib

import torch

from evo.records import Task

KERNELS_DIR = pathlib.Path(__file__).parent / "kernels"

DEFAULT_TOLERANCE = {
    "float32": (1e-5, 1.3e-6),
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
}
"""dtype name -> (atol, rtol), per element: |out - ref| <= atol + rtol * |ref|.

torch.testing.assert_close's defaults. A task that needs more says why in its
`tolerance_reason` (long reductions whose order legitimately differs from PyTorch's)."""


def widened_tolerance(atol: float, rtol: float, *dtype_names: str) -> dict:
    """Returns DEFAULT_TOLERANCE with (atol, rtol) raised to at least the given values for
    `dtype_names`; the task must state why in `tolerance_reason`."""
    tolerance = dict(DEFAULT_TOLERANCE)
    for name in dtype_names:
        default_atol, default_rtol = DEFAULT_TOLERANCE[name]
        tolerance[name] = (max(atol, default_atol), max(rtol, default_rtol))
    return tolerance


def baseline_source(name: str) -> str:
    """Returns the text of the baseline kernel module `kernels/<name>.py`."""
    return (KERNELS_DIR / f"{name}.py").read_text()


def dtype(name: str) -> torch.dtype:
    """Returns the torch dtype called `name` ("float16" -> torch.float16)."""
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype name {name!r}")
    return value


def itemsize(name: str) -> int:
    """Returns the size in bytes of one element of dtype `name`."""
    return dtype(name).itemsize


def generator(seed: int, device="cpu") -> torch.Generator:
    """Returns a torch.Generator seeded with `seed`, living on `device`."""
    gen = torch.Generator(device=torch.device(device))
    gen.manual_seed(int(seed))
    return gen


def randn(shape, dtype_, gen: torch.Generator, device) -> torch.Tensor:
    """Returns standard-normal values of `shape`, drawn on `device` with `gen`.

    `gen` must live on `device` (see `generator`); values are drawn in float32 and cast,
    so every dtype sees the same distribution.
    """
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype_)


def builtin_task(name: str, **fields) -> Task:
    """Returns the built-in Task `name`: its own entry point, its baseline `kernels/<name>.py`."""
    return Task(name=name, suite="builtin", entry_point=name,
                baseline_source=baseline_source(name), **fields)


def matrix_inputs(params, seed, device, vectors: int = 0) -> tuple:
    """`make_inputs` of tasks taking an [M, N] tensor and `vectors` [N] tensors (bias, weight).

    Returns (x, v_1, ..., v_vectors), standard-normal values of the case's dtype; bind
    `vectors` with functools.partial, which pickles like the function itself.
    """
    gen = generator(seed, device)
    dtype_ = dtype(params["dtype"])
    x = randn((params["M"], params["N"]), dtype_, gen, device)
    return (x, *(randn((params["N"],), dtype_, gen, device) for _ in range(vectors)))


def elements(params) -> int:
    """Returns M * N, the element count of a task's [M, N] input."""
    return params["M"] * params["N"]


def exact_tolerance(*dtype_names: str) -> dict:
    """Returns a zero tolerance for each dtype: for tasks that only copy values (bit-exact)."""
    return {name: (0.0, 0.0) for name in dtype_names}
