"""What the external-suite loaders share: finding the kernel folder, splitting a GEAK file
into kernel and test code, and making a Task whose ground truth is the suite's harness.

GEAK-eval's two suites keep one file per kernel: the kernel code, a separator line of 146
'#', then the test code (the harness). A candidate replaces the part above the separator.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib
import re
from typing import Iterable

from benchmarks.external.platforms import platform_limits
from evo.records import Case, Task, parse_source

SEPARATOR = "#" * 146
"""The line between a GEAK file's kernel code and its test code."""

_DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "int8", "int32", "int64",
                "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")

SUITE_TOLERANCE = {
    "tritonbench-revised": (1e-3, 1e-1),
    "rocm": (1e-2, 1e-2),
    "kernelbench": (1e-2, 1e-2),
}
"""(atol, rtol) each suite's own evaluator compares outputs with (GEAK-eval, KernelBench)."""


class SuiteLayoutError(FileNotFoundError):
    """The path holds no kernel folder of the expected layout; the message lists what was tried."""


def find_folder(path: str | None, suite: str, subpaths: Iterable[str],
                accept=lambda folder: any(folder.glob("*.py"))) -> pathlib.Path:
    """Returns the first of `path/<subpath>` that exists and is accepted, else raises."""
    if not path:
        raise ValueError(f"suite {suite!r} is read from a local checkout: give its path "
                         f"(--path DIR, or `path` in the campaign config)")
    root = pathlib.Path(path).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"suite {suite!r}: path {str(root)!r} does not exist")
    tried = []
    for sub in subpaths:
        folder = root / sub if sub else root
        tried.append(str(folder))
        if folder.is_dir() and accept(folder):
            return folder.resolve()
    raise SuiteLayoutError(f"suite {suite!r}: no kernel folder under {str(root)!r}; looked in: "
                           + ", ".join(tried))


def _is_separator(line: str) -> bool:
    return line.strip() == SEPARATOR


def split_geak_file(text: str, where: str) -> tuple[str, str]:
    """Returns (kernel code, test code) of a GEAK file; raises ValueError without a separator."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if _is_separator(line):
            kernel, tests = "".join(lines[:index]), "".join(lines[index + 1:])
            if not tests.strip():
                raise ValueError(f"{where}: nothing after the separator line")
            return kernel.rstrip() + "\n", tests.strip() + "\n"
    raise ValueError(f"{where}: no separator line of 146 '#' between kernel and test code")


def with_test_imports(kernel: str, tests: str) -> str:
    """Returns `kernel` with the test code's top-level imports of names it uses and never
    binds put first. GEAK-eval imports a file whole, so a kernel may lean on its tests'
    imports (block_sparse_attn calls `torch` and imports it only below the separator); the
    judge imports the kernel code alone."""
    import builtins

    kernel_tree, tests_tree = parse_source(kernel), parse_source(tests)
    bound = {name for node in ast.walk(kernel_tree) for name in _binds(node)}
    used = {node.id for node in ast.walk(kernel_tree) if isinstance(node, ast.Name)}
    lacking = used - bound - set(dir(builtins))
    lines = [ast.get_source_segment(tests, node) for node in tests_tree.body
             if isinstance(node, (ast.Import, ast.ImportFrom)) and set(_binds(node)) & lacking]
    return "".join(f"{line}\n" for line in lines) + kernel


def _binds(node: ast.AST) -> list[str]:
    """Returns the names `node` binds: an import's, a definition's, an assignment target's,
    a parameter's, an exception handler's."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    return []


def read_instructions(folder: pathlib.Path, names: Iterable[str]) -> dict[str, dict]:
    """Returns the entries of the first instruction JSON found beside or above `folder`,
    by file name ({} when there is none)."""
    for directory in (folder, folder.parent):
        for name in names:
            candidate = directory / name
            if candidate.is_file():
                entries = json.loads(candidate.read_text())
                if not isinstance(entries, list):
                    raise ValueError(f"{candidate}: expected a JSON list of task entries")
                return {entry["file"]: entry for entry in entries if "file" in entry}
    return {}


def top_level_functions(source: str) -> list[ast.FunctionDef]:
    return [node for node in parse_source(source).body if isinstance(node, ast.FunctionDef)]


def _is_jit(function: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(decorator) for decorator in function.decorator_list)


def _names_in(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _bound_names(node: ast.stmt) -> list[str]:
    """Returns the names a top-level statement binds: a def, a class, `name = ...`."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    return []


def launching_definitions(source: str) -> set[str]:
    """Returns the top-level names (functions, classes, assignments) that launch a Triton
    kernel: the @jit kernels, and every definition that names one of them, directly or
    through other such definitions (a wrapper calling an autograd Function's `apply`)."""
    body = parse_source(source).body
    launching = {node.name for node in body if isinstance(node, ast.FunctionDef) and _is_jit(node)}
    grew = True
    while grew:
        before = len(launching)
        launching |= {name for node in body if _names_in(node) & launching for name in _bound_names(node)}
        grew = len(launching) > before
    return launching


def pick_entry_point(kernel: str, tests: str, where: str) -> str:
    """Returns the kernel-side function the test code uses first that launches a Triton
    kernel (a wrapper, or a @jit kernel); else the first it uses; else the first @jit kernel.

    GEAK's files name no entry point; the test code's use of the kernel module is the
    contract a candidate must keep. Helpers the test code also calls (`get_num_sms`) launch
    nothing, so they are passed over.
    """
    functions = top_level_functions(kernel)
    used_by_tests = _names_in(parse_source(tests))
    used = [function.name for function in functions if function.name in used_by_tests]
    launching = launching_definitions(kernel)
    jitted = [function.name for function in functions if _is_jit(function)]
    choices = [name for name in used if name in launching] + used + jitted
    if not choices:
        raise ValueError(f"{where}: the kernel code defines no function the test code calls "
                         f"and no @triton.jit kernel")
    return choices[0]


def harness_tests(tests: str, skip: Iterable[str] = ()) -> list[str]:
    """Returns the names of the `test_*` functions in the test code, minus `skip`."""
    skipped = set(skip)
    return [f.name for f in top_level_functions(tests)
            if f.name.startswith("test_") and f.name not in skipped]


def dtypes_in(source: str) -> tuple[str, ...]:
    """Returns the torch dtype names a source mentions, in a fixed order."""
    return tuple(name for name in _DTYPE_NAMES if re.search(rf"\b{name}\b", source))


def tolerance_for(suite: str) -> dict[str, tuple[float, float]]:
    """Returns the suite's (atol, rtol) for every dtype; integers compare exactly."""
    atol, rtol = SUITE_TOLERANCE[suite]
    floats = {name: (atol, rtol) for name in ("float32", "float64", "float16", "bfloat16")}
    return {**floats, "int32": (0.0, 0.0), "int64": (0.0, 0.0)}


def task_name(stem: str) -> str:
    """Returns a registry-safe task name for a file stem ("94_MSELoss" stays readable)."""
    name = re.sub(r"[^0-9A-Za-z_.-]", "_", stem)
    return name if name[:1].isalpha() or name[:1] == "_" else f"k{name}"


def interface(kernel: str, tests: str) -> list[str]:
    """Returns the kernel-side names (functions, classes) the test code uses, in kernel order."""
    used = _names_in(parse_source(tests))
    defined = [node.name for node in parse_source(kernel).body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    return [name for name in defined if name in used]


def default_instruction(stem: str, kernel: str, tests: str, how_tests_run: str) -> str:
    """Returns the instruction for a file no instruction JSON covers: the interface the
    test code relies on, and the test code itself."""
    names = ", ".join(f"`{name}`" for name in interface(kernel, tests)) or "the kernel functions"
    return (f"Write the Triton module `{stem}.py`. The suite's test code below {how_tests_run} "
            f"and uses {names}: keep those names and signatures and produce the same results "
            f"as the reference, computed with Triton kernels.\n\n"
            f"Test code:\n```python\n{tests}```\n")


def geak_files(folder: pathlib.Path, suite: str, listed: Iterable[str] = ()) -> list[pathlib.Path]:
    """Returns the kernel files of a GEAK folder: those `listed` (which must all exist), else
    every file holding a separator line, in file-name order. A line of some other number of
    '#' (GEAK-eval's ROCm folder keeps a helper `check.py` with 148) does not make a task."""
    listed = sorted(listed)
    missing = [name for name in listed if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"suite {suite!r}: the instruction file lists files absent "
                                f"from {folder}: {', '.join(missing)}")
    files = [folder / name for name in listed] or sorted(
        p for p in folder.glob("*.py") if any(map(_is_separator, p.read_text().splitlines())))
    if not files:
        raise SuiteLayoutError(f"suite {suite!r}: {folder} has no kernel file with a "
                               f"146-'#' separator line")
    return files


def portable_libdevice(source: str) -> str:
    """Returns `source` with HIP's libdevice (`tl.extra.hip.libdevice`, GEAK-eval's AMD edit of
    TritonBench's CUDA one) named as Triton's backend-dispatching `tl.extra.libdevice`, which
    resolves to the same functions on AMD and to CUDA's on NVIDIA: the reference then runs on
    both, as TritonBench's original did."""
    return re.sub(r"\bextra\.hip\.libdevice\b", "extra.libdevice", source)


def geak_task(path: pathlib.Path, suite: str, kernel: str, tests: str, entry: dict,
              entry_point: str, case_names: list[str], how_tests_run: str,
              tags: tuple[str, ...] = (), **timing) -> Task:
    """Returns the Task of one GEAK file: the kernel code is the baseline a candidate
    replaces, the test code is the harness, and each of its tests a case; `timing`: the
    Task's `perf_harness`, `untimed_reason` and `timing_calls`, as the suite's loader finds them. Both
    codes name libdevice portably (`portable_libdevice`)."""
    kernel, tests = portable_libdevice(kernel), portable_libdevice(tests)
    cases = tuple(Case(name, {"test": name}) for name in case_names)
    return harness_task(
        suite, path, harness=tests, sources=(kernel, tests),
        name=task_name(path.stem),
        instruction=entry.get("instruction") or default_instruction(
            path.stem, kernel, tests, how_tests_run),
        baseline_source=kernel,
        entry_point=entry_point,
        cases=cases,
        interpreter_cases=cases,
        difficulty=min(5, max(1, int(entry.get("difficulty") or 3))),
        tags=tags + (("autotune",) if "triton.autotune" in kernel else ()),
        dtypes=dtypes_in(kernel + tests),
        **timing,
    )


def harness_task(suite: str, path: pathlib.Path, harness: str, sources: tuple[str, ...],
                 tags: tuple[str, ...], **fields) -> Task:
    """Returns a Task of an external suite: its own test code (`harness`) is the ground truth,
    so it has no reference, input maker or roofline; `sources` decide where it can run."""
    runnable_on, skip_reason = platform_limits(*sources)
    return Task(suite=suite, reference=None, make_inputs=None, flops=None, bytes=None,
                tolerance=tolerance_for(suite), tags=("external", suite) + tags, harness=harness,
                runnable_on=runnable_on, skip_reason=skip_reason, source_path=str(path), **fields)


def with_recorded(calls, fields: dict):
    """Returns `calls` (a suite's timing-calls dataclass) with the fields its `record` gave,
    JSON's lists back as the tuples the dataclass holds."""
    return dataclasses.replace(calls, **{key: tuple(value) if isinstance(value, list) else value
                                         for key, value in fields.items()})
