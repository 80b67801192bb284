"""On which backends an external task can run, decided from its source text alone."""

from __future__ import annotations

import ast
import re

from evo.records import parse_source

AMD_ONLY_FEATURES = (
    *((dtype, f"the fnuz fp8 dtype {dtype}")
      for dtype in ("float8_e4m3fnuz", "float8_e5m2fnuz", "fp8e4b8", "fp8e5b16")),
    *((option, f"the AMD launch option {option}")
      for option in ("waves_per_eu", "matrix_instr_nonkdim", "kpack")),
    ("extra.hip", "HIP libdevice (tl.extra.hip)"),
)
"""(marker in the source, what it is): features Triton offers only on AMD GPUs."""

BACKENDS = ("cuda", "rocm", "interpreter")

_HARD_CODED_CUDA = re.compile(
    r"""device\s*=\s*["']cuda|\.cuda\(|\.to\(\s*["']cuda|torch\.device\(\s*["']cuda(:\d+)?["']\s*\)""")
"""Tensors placed on 'cuda' by name: such code cannot run on the CPU interpreter."""

_DEVICE_CALLS = re.compile(
    r"torch\.cuda\.(?!(?:is_available|manual_seed|manual_seed_all|device_count|empty_cache|amp)\b)\w+")
"""`torch.cuda` uses that need a GPU (a CPU-only torch answers only the excluded ones)."""

_GPU_DRIVER = re.compile(r"\bdriver\.active\b")
"""`triton.runtime.driver.active`: Triton's GPU driver, absent on a CPU-only machine."""

_LIBDEVICE = re.compile(r"\blibdevice\b")
"""Triton's libdevice math (tl.extra.cuda / tl.extra.libdevice), which the interpreter lacks."""


def _outside_hip_functions(source: str) -> str:
    """Returns `source` without its top-level functions named for HIP (`get_hip_autotune_config`):
    GEAK files pick those only when the backend is HIP, so what they use is no AMD-only need."""
    try:
        hip = [(f.lineno, f.end_lineno) for f in parse_source(source).body
               if isinstance(f, ast.FunctionDef) and "hip" in f.name.lower()]
    except SyntaxError:
        return source
    return "".join(line for number, line in enumerate(source.splitlines(keepends=True), 1)
                   if not any(first <= number <= last for first, last in hip))


def _list_grid(node: ast.AST) -> bool:
    return isinstance(node, ast.List) or (isinstance(node, ast.Lambda) and isinstance(node.body, ast.List))


def launches_with_list_grid(source: str) -> bool:
    """Whether a kernel is launched with a list as its grid (`kernel[[m, n]](...)`, or a
    name bound to a list or to a lambda returning one): a GPU takes it, the interpreter
    only takes tuples."""
    try:
        tree = parse_source(source)
    except SyntaxError:
        return False
    lists = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and _list_grid(node.value)
             for target in node.targets if isinstance(target, ast.Name)}
    grids = [node.func.slice for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)]
    return any(_list_grid(grid) or (isinstance(grid, ast.Name) and grid.id in lists) for grid in grids)


def _interpreter_gaps(text: str, portable: str, sources) -> list[str]:
    """Returns what in the sources the CPU interpreter cannot run, in words."""
    calls = sorted(set(_DEVICE_CALLS.findall(text)))
    gaps = [("places tensors on 'cuda' by name", bool(_HARD_CODED_CUDA.search(text))),
            (f"calls {', '.join(calls)}", bool(calls)),
            ("asks Triton's GPU driver (triton.runtime.driver.active)", bool(_GPU_DRIVER.search(text))),
            ("uses libdevice math, which the interpreter lacks", bool(_LIBDEVICE.search(portable))),
            ("launches a kernel with a list as its grid (the interpreter takes tuples)",
             any(map(launches_with_list_grid, sources)))]
    return [words for words, found in gaps if found]


def platform_limits(*sources: str) -> tuple[tuple[str, ...], str]:
    """Returns (runnable_on, skip_reason) for a task made of these sources, decided from the
    text alone (evidence: RESULTS.md#external-platforms, checked against real runs).

    AMD-only features keep a task on ROCm. The CPU interpreter cannot run code that needs a
    GPU (tensors placed on 'cuda', `torch.cuda` device calls, Triton's GPU driver) or what
    the interpreter lacks (libdevice math, list grids). The reason has one clause per
    cause, each naming the backends it rules out.
    """
    text = "\n".join(sources)
    portable = "\n".join(map(_outside_hip_functions, sources))
    amd = [what for marker, what in AMD_ONLY_FEATURES if marker in portable]
    gaps = _interpreter_gaps(text, portable, sources)
    clauses = ([f"not on cuda or interpreter: needs AMD, uses {', '.join(amd)}"] if amd else []) + \
              ([f"not on interpreter: {'; '.join(gaps)}"] if gaps else [])
    missing = ({"cuda", "interpreter"} if amd else set()) | ({"interpreter"} if gaps else set())
    return tuple(b for b in BACKENDS if b not in missing), ". ".join(clauses)
