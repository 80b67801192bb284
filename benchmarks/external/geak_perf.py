"""GEAK-eval's performance definitions of TritonBench-revised (`<task>_perf.py`), made runnable
in the sandbox: the inputs and the call a task is timed on, as GEAK-eval times it.

Each file subclasses geak_eval's `Performance_Metrics` as `performance_metrics`:
`get_input_tensors` fills `input_tensors` with the performance inputs (built on the host),
`to_cuda` moves one to the GPU and `call_op` calls the kernel module's function on it.
GEAK-eval runs the file as a script beside the kernel module; here the sandboxed worker runs
the class (`fitness.sandbox.harness_run`), so the file is prepared on the trusted side first:
what reaches outside the worker's folder goes (its `sys.path` edits, the import of the
reference from geak_eval's data package, which only `call_op_ref` uses) and so does its
script block; what stays must define the class with those three methods and import the
kernel module by the task's name. GEAK-eval's speedup of a task is the reference's total
latency over the candidate's, over these inputs (its `2_efficiency.py`).
"""

from __future__ import annotations

import ast
import pathlib

from evo.records import parse_source

FOLDERS = ("../../performance_metrics/perf_G/golden_metrics", "../performance_metrics/perf_G/golden_metrics",
           "performance_metrics/perf_G/golden_metrics", "golden_metrics")
"""Where a kernel folder's performance files are looked for, relative to it (GEAK-eval keeps
them two levels up, under `performance_metrics/perf_G/golden_metrics`)."""

CLASS = "performance_metrics"
METHODS = ("get_input_tensors", "to_cuda", "call_op")
"""What the judge's recorder calls of the class (`benchmarks.external.recorded`)."""

_REACHES_OUT = ("geak_eval.data",)
"""Imports the prepared file drops: the reference module, as GEAK-eval's data package holds it."""


class UnusablePerfFile(ValueError):
    """A performance file the worker could not run as GEAK-eval does; the message says why."""


def find(kernel_folder: pathlib.Path, stem: str) -> pathlib.Path | None:
    """Returns the performance file of task file `stem` (None when there is none)."""
    for folder in FOLDERS:
        path = (kernel_folder / folder / f"{stem}_perf.py").resolve()
        if path.is_file():
            return path
    return None


def load(kernel_folder: pathlib.Path, stem: str) -> tuple[str | None, str]:
    """Returns (the prepared performance file, "") or (None, why the task is not timed)."""
    path = find(kernel_folder, stem)
    if path is None:
        return None, (f"not timed: no performance file {stem}_perf.py under "
                      f"{kernel_folder}/{FOLDERS[0]} (GEAK-eval's golden_metrics)")
    try:
        return prepare(path.read_text(), stem, str(path)), ""
    except UnusablePerfFile as error:
        return None, f"not timed: {error}"


def prepare(text: str, stem: str, where: str) -> str:
    """Returns the performance file `text` of kernel module `stem`, ready for the worker; raises
    UnusablePerfFile naming what is missing."""
    try:
        module = parse_source(text)
    except SyntaxError as error:
        raise UnusablePerfFile(f"{where}: not valid Python ({error.msg}, line {error.lineno})") from None
    references = {alias.asname or alias.name for node in module.body if _dropped(node)
                  and isinstance(node, ast.ImportFrom) for alias in node.names}
    module.body = [node for node in module.body if not _dropped(node)]
    classes = {node.name: node for node in module.body if isinstance(node, ast.ClassDef)}
    if CLASS not in classes:
        raise UnusablePerfFile(f"{where}: defines no class {CLASS!r}")
    defined = {node.name: node for node in classes[CLASS].body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in METHODS if name not in defined]  # the last definition of each wins
    if missing:
        raise UnusablePerfFile(f"{where}: class {CLASS!r} lacks {', '.join(missing)}")
    for name in METHODS:
        called = sorted(references & {node.id for node in ast.walk(defined[name]) if isinstance(node, ast.Name)})
        if called:
            raise UnusablePerfFile(f"{where}: its {name} uses {', '.join(called)}, the reference "
                                   f"imported from geak_eval's data package, so it would time the "
                                   f"reference for every candidate")
    if not any(isinstance(node, ast.ImportFrom) and node.module == stem for node in module.body):
        raise UnusablePerfFile(f"{where}: never imports the kernel module {stem!r} (from {stem} import ...)")
    return ast.unparse(module) + "\n"


def _dropped(node: ast.stmt) -> bool:
    """Whether a top-level statement is one `prepare` drops: a `sys.path` edit, an import from
    geak_eval's data package, or the `if __name__ == "__main__":` block."""
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").startswith(_REACHES_OUT)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return ast.unparse(node.value.func).startswith("sys.path.")
    if isinstance(node, ast.If):
        return "__name__" in ast.unparse(node.test)
    return False
