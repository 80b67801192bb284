"""How `evo tasks` shows tasks: a rich table, or plain dicts for --json."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from evo.records import Task
from operators import tables


def task_summary(task: Task) -> dict:
    """Returns the JSON-ready summary of a task."""
    return {
        "name": task.name,
        "suite": task.suite,
        "entry_point": task.entry_point,
        "difficulty": task.difficulty,
        "dtypes": list(task.dtypes),
        "tags": list(task.tags),
        "cases": [case.name for case in task.cases],
        "interpreter_cases": [case.name for case in task.interpreter_cases],
        "runnable_on": list(task.runnable_on),
        "skip_reason": task.skip_reason,
        "knob_space": knob_space(task),
    }


def knob_space(task: Task) -> dict:
    """Returns the per-shape knob space the task's baseline declares (`operators.tables.space`):
    its shape buckets with their settings, every knob's allowed values, and the design knobs.
    The offline operators search this space; a baseline without a table has empty fields."""
    try:
        return tables.space(task.baseline_source or "")
    except SyntaxError:
        return tables.space("")


def print_table(tasks: list[Task]) -> None:
    """Prints one row per task; GPU cases one per line, the interpreter cases counted."""
    table = Table(title=f"{len(tasks)} tasks", show_lines=True)
    table.add_column("name", no_wrap=True)
    for column in ("suite", "difficulty", "dtypes", "cases"):
        table.add_column(column)
    for task in tasks:
        cases = [case.name for case in task.cases]
        cases.append(f"(+{len(task.interpreter_cases)} interpreter cases)")
        table.add_row(task.name, task.suite, str(task.difficulty), ", ".join(task.dtypes),
                      "\n".join(cases))
    Console().print(table)
