"""Helpers shared by the built-in task modules: cases, seeded inputs, dtypes, tolerances, baselines."""

import pathlib

import torch

from evo.records import Case, Task

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

SHORT_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
"""The dtype abbreviations case labels use, in the order a task lists its dtypes."""


def widened_tolerance(atol: float, rtol: float, *dtype_names: str) -> dict:
    """Returns DEFAULT_TOLERANCE with (atol, rtol) raised to at least the given values for
    `dtype_names`; the task must state why in `tolerance_reason`."""
    tolerance = dict(DEFAULT_TOLERANCE)
    for name in dtype_names:
        default_atol, default_rtol = DEFAULT_TOLERANCE[name]
        tolerance[name] = (max(atol, default_atol), max(rtol, default_rtol))
    return tolerance


def exact_tolerance(*dtype_names: str) -> dict:
    """Returns a zero tolerance for each dtype: for tasks that only copy values (bit-exact)."""
    return {name: (0.0, 0.0) for name in dtype_names}


def baseline_source(name: str) -> str:
    """Returns the text of the baseline kernel module `kernels/<name>.py`."""
    return (KERNELS_DIR / f"{name}.py").read_text()


def builtin_task(name: str, cases: tuple[Case, ...], interpreter_cases: tuple[Case, ...],
                 tolerance: dict = DEFAULT_TOLERANCE, **fields) -> Task:
    """Returns the built-in Task `name`: its own entry point, its baseline `kernels/<name>.py`,
    and as `dtypes` those its cases use."""
    used = {case.params["dtype"] for case in cases + interpreter_cases}
    return Task(name=name, suite="builtin", entry_point=name, baseline_source=baseline_source(name),
                cases=cases, interpreter_cases=interpreter_cases, tolerance=tolerance,
                dtypes=tuple(d for d in SHORT_DTYPES.values() if d in used), **fields)


def cases(sizes: str, *labels: str, **fixed: int) -> tuple[Case, ...]:
    """Returns one Case per label, its params read from the label, so the two cannot disagree.

    With `sizes` "M N", "4096x1000 fp16" gives {"M": 4096, "N": 1000, "dtype": "float16"};
    a label may also name its sizes ("T=9 V=100 fp32", in the order of `sizes`). `fixed`
    adds sizes every label leaves out (flash attention's head dim), before the dtype.
    """
    names = sizes.split()
    made = []
    for label in labels:
        shape, short = label.rsplit(" ", 1)
        if "=" in shape:
            pairs = [part.split("=") for part in shape.split()]
        else:
            values = shape.split("x")
            pairs = list(zip(names, values)) if len(values) == len(names) else []
        if [key for key, _ in pairs] != names:
            raise ValueError(f"case label {label!r} does not give the sizes {names}")
        params = {key: int(value) for key, value in pairs}
        made.append(Case(label, {**params, **fixed, "dtype": SHORT_DTYPES[short]}))
    return tuple(made)


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


def normal_inputs(params, seed, device, *shapes) -> tuple:
    """Returns one tensor of standard-normal values of the case's dtype per shape, drawn in
    order from one generator seeded with `seed`."""
    gen = generator(seed, device)
    dtype_ = dtype(params["dtype"])
    return tuple(randn(shape, dtype_, gen, device) for shape in shapes)


def matrix_inputs(params, seed, device, vectors: int = 0) -> tuple:
    """`make_inputs` of tasks taking an [M, N] tensor and `vectors` [N] tensors (bias, weight).

    Returns (x, v_1, ..., v_vectors); bind `vectors` with functools.partial, which pickles
    like the function itself.
    """
    M, N = params["M"], params["N"]
    return normal_inputs(params, seed, device, (M, N), *[(N,)] * vectors)


def elements(params) -> int:
    """Returns M * N, the element count of a task's [M, N] input."""
    return params["M"] * params["N"]



def no_flops(params) -> float:
    """`flops` of a task that only moves data."""
    return 0.0


def flop_per_element(params) -> float:
    """`flops` of a task doing one operation (an add, a compare) per element of its [M, N] input."""
    return float(elements(params))


def matrix_in_out_bytes(params, vectors: int = 0) -> float:
    """`bytes` of a task that reads its [M, N] input and `vectors` [N] tensors (weight, bias)
    once and writes an [M, N] output once."""
    return (2.0 * elements(params) + vectors * params["N"]) * itemsize(params["dtype"])


def matmul_flops(params) -> float:
    """`flops` of a matrix product, batched when params has "B": a multiply-add per (b, m, n, k)."""
    return 2.0 * params.get("B", 1) * params["M"] * params["N"] * params["K"]


def matmul_bytes(params) -> float:
    """`bytes` of a matrix product, batched when params has "B": reads a [M, K] and b [K, N]
    once, writes c [M, N] once, per batch."""
    M, N, K = params["M"], params["N"], params["K"]
    return params.get("B", 1) * (M * K + K * N + M * N) * itemsize(params["dtype"])


FP16_MATMUL = {
    "tolerance": widened_tolerance(1e-2, 1e-3, "float16"),
    "tolerance_reason": (
        "fp32 accumulation over K (up to 8192) in another order than cuBLAS's: absolute "
        "differences grow like sqrt(K) and show on outputs near zero"),
    "flops": matmul_flops,
    "bytes": matmul_bytes,
    "difficulty": 4,
}
"""The task fields matmul and batched_matmul share: fp16 products with an fp32 accumulator."""

EXACT_MATRIX_COPY = {
    "make_inputs": matrix_inputs,
    "tolerance": exact_tolerance("float32", "float16"),  # a copy is exact
    "flops": no_flops,
    "bytes": matrix_in_out_bytes,  # reads x (M * N), writes out (M * N elements)
}
"""The task fields flip2d and transpose share: an [M, N] fp32 or fp16 tensor copied bit for bit."""
