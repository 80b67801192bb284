"""How `evo tasks` shows tasks: a rich table, or plain dicts for --json (the same columns)."""

from __future__ import annotations

import ast

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchmarks.external.platforms import BACKENDS
from evo.records import Task, parse_source
from operators import offline, tables

PIPED_WIDTH = 10_000
"""Console width when stdout is not a terminal: wide enough that no column is cut."""


def task_summary(task: Task) -> dict:
    """Returns the JSON-ready summary of a task: every column of the table, and more."""
    return {
        "name": task.name,
        "suite": task.suite,
        "entry_point": task.entry_point,
        "signature": signature(task),
        "difficulty": task.difficulty,
        "dtypes": list(task.dtypes),
        "tags": list(task.tags),
        "cases": [case.name for case in task.cases],
        "interpreter_cases": [case.name for case in task.interpreter_cases],
        "runnable_on": list(task.runnable_on),
        "not_on": not_on(task),
        "skip_reason": task.skip_reason,
        "timed": not task.untimed_reason,  # a correct candidate gets a latency and a speedup
        "untimed_reason": task.untimed_reason,
        "knob_space": knob_space(task),
        "knobs": offline_knobs(task),
    }


def _arguments(function: ast.FunctionDef, drop_self: bool = False) -> str:
    arguments = function.args
    if drop_self and arguments.args:
        arguments = ast.arguments(**{**vars(arguments), "args": arguments.args[1:]})
    return ast.unparse(arguments)


def _function_signature(function: ast.FunctionDef) -> str:
    returns = f" -> {ast.unparse(function.returns)}" if function.returns else ""
    return f"{function.name}({_arguments(function)}){returns}"


def _method(classes: dict[str, ast.ClassDef], name: str, method: str) -> ast.FunctionDef | None:
    """Returns `method` of class `name`, looked up through its bases defined in the module."""
    seen = set()
    while name in classes and name not in seen:
        seen.add(name)
        found = [node for node in classes[name].body
                 if isinstance(node, ast.FunctionDef) and node.name == method]
        if found:
            return found[0]
        bases = [base.id for base in classes[name].bases if isinstance(base, ast.Name)]
        name = bases[0] if bases else ""
    return None


def _class_signature(classes: dict[str, ast.ClassDef], name: str) -> str:
    """Returns `Name(init args).forward(args)` for a module class such as KernelBench's ModelNew."""
    init, forward = _method(classes, name, "__init__"), _method(classes, name, "forward")
    built = f"{name}({_arguments(init, drop_self=True) if init else ''})"
    return f"{built}.forward({_arguments(forward, drop_self=True)})" if forward else built


def signature(task: Task) -> str:
    """Returns the entry point's signature as the baseline writes it
    (`softmax(x: torch.Tensor) -> torch.Tensor`); "" when the baseline does not parse."""
    try:
        body = parse_source(task.baseline_source or "").body
    except SyntaxError:
        return ""
    classes = {node.name: node for node in body if isinstance(node, ast.ClassDef)}
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == task.entry_point:
            return _function_signature(node)
    return _class_signature(classes, task.entry_point) if task.entry_point in classes else ""


def not_on(task: Task) -> dict[str, str]:
    """Returns, for each backend the task does not run on, why not (the task's reason, whose
    clauses name the backends each rules out)."""
    return {backend: task.skip_reason or "not runnable there"
            for backend in BACKENDS if backend not in task.runnable_on}


def knob_space(task: Task) -> dict:
    """Returns the per-shape knob space the task's baseline declares (`operators.tables.space`):
    its shape buckets with their settings, every knob's allowed values, and the design knobs.
    The offline operators search this space; a baseline without a table has empty fields."""
    try:
        return tables.space(task.baseline_source or "")
    except SyntaxError:
        return tables.space("")


def offline_knobs(task: Task) -> dict[str, dict[str, list[int]]]:
    """Returns, for each backend the task runs on, {knob key: allowed values} of every knob
    the offline operators vary on its baseline (`operators.offline.knob_space`): launch
    options, block sizes, autotune configs and, for a baseline with a per-shape table, its
    entries (keyed `CONFIGS[bucket].NAME`, the `knob_space` above). Per backend, because the
    launch options differ (ROCm's `waves_per_eu`...); empty where there is nothing to vary."""
    found = {}
    for backend in task.runnable_on:
        try:
            space = offline.knob_space(task, task.baseline_source or "", backend)
        except (SyntaxError, ValueError):
            space = {}
        found[backend] = {key: list(values) for key, values in space.items()}
    return found


def _runs_on(task: Task) -> str:
    runs = ", ".join(task.runnable_on) or "nowhere"
    return f"{runs}\n{task.skip_reason or 'not runnable there'}" if not_on(task) else runs


def print_table(tasks: list[Task]) -> None:
    """Prints one row per task: entry point and signature, where it runs and why not
    elsewhere, GPU cases one per line, the interpreter cases counted. Piped, the table is
    as wide as its content instead of the 80 columns rich assumes without a terminal."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=PIPED_WIDTH)
    table = Table(title=f"{len(tasks)} tasks", show_lines=True)
    table.add_column("name", no_wrap=True)
    table.add_column("suite", no_wrap=True)
    table.add_column("entry point", overflow="fold")
    table.add_column("difficulty", no_wrap=True, justify="right")
    for column in ("dtypes", "cases", "runs on"):
        table.add_column(column, overflow="fold")
    for task in tasks:
        cases = [case.name for case in task.cases]
        cases.append(f"(+{len(task.interpreter_cases)} interpreter cases)")
        cells = (task.name, task.suite, signature(task) or task.entry_point, str(task.difficulty),
                 ", ".join(task.dtypes), "\n".join(cases), _runs_on(task))
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)
