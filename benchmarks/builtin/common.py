"""Helpers shared by the built-in task modules: seeded inputs, dtypes, tolerances, baselines."""

import pathlib

import torch

from evo.records import Task

KERNELS_DIR = pathlib.Path(__file__).parent / "kernels"

DEFAULT_TOLERANCE = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
}
"""dtype name -> (atol, rtol); the checker scales atol by the reference output's magnitude."""


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
