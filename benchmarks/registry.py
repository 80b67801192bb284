"""The task registry: validates tasks on entry and finds them by name or suite."""

from __future__ import annotations

import ast
import math

from evo.records import Task, parse_source


class TaskError(ValueError):
    """A task is malformed; the message names the task and the problem."""


class UnknownTaskError(KeyError):
    """No task of that name; the message lists what exists."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the sentence as is
        return str(self.args[0])


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _defines_function(source: str, name: str) -> bool:
    tree = parse_source(source)
    # A class counts too: KernelBench's entry point is `class ModelNew`.
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name
               for node in tree.body)


def _check_tolerance(task: Task, fail) -> None:
    """Every listed dtype needs a tolerance, and every tolerance is a finite (atol, rtol) >= 0."""
    for dtype in task.dtypes:
        if dtype not in task.tolerance:
            fail(f"dtype {dtype!r} has no tolerance entry (tolerance has {sorted(task.tolerance)})")
    for dtype, bound in task.tolerance.items():
        try:
            atol, rtol = bound
            finite = all(math.isfinite(v) and v >= 0 for v in (atol, rtol))
        except (TypeError, ValueError):
            finite = False
        if not finite:
            fail(f"tolerance[{dtype!r}] is {bound!r}; expected (atol, rtol), finite and >= 0")


def _check_cases(task: Task, label: str, cases, fail) -> None:
    """A case set has >= 3 uniquely named cases, a non-power-of-two size, known dtypes."""
    if len(cases) < 3:
        fail(f"{label} has {len(cases)} cases; at least 3 are required")
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        fail(f"{label} has duplicate case names: {names}")
    sizes = [v for case in cases for k, v in case.params.items()
             if isinstance(v, int) and not isinstance(v, bool) and k != "seed"]
    if sizes and all(_is_power_of_two(v) for v in sizes):
        fail(f"{label} has only power-of-two sizes; add a non-power-of-two case")
    for case in cases:
        dtype = case.params.get("dtype")
        if dtype is not None and dtype not in task.tolerance:
            fail(f"case {case.name!r} uses dtype {dtype!r} with no tolerance entry "
                 f"(tolerance has {sorted(task.tolerance)})")
        if dtype is not None and task.dtypes and dtype not in task.dtypes:
            fail(f"case {case.name!r} uses dtype {dtype!r}, which dtypes "
                 f"{list(task.dtypes)} does not list")


def validate(task: Task) -> Task:
    """Returns `task` if it is well formed, else raises TaskError naming the problem."""

    def fail(problem: str) -> None:
        raise TaskError(f"task {task.name!r}: {problem}")

    if not task.name or not task.name.replace("-", "_").replace(".", "_").isidentifier():
        fail("name must be a non-empty identifier-like string")
    if not task.entry_point.isidentifier():
        fail(f"entry_point {task.entry_point!r} is not a Python identifier")
    if not task.instruction.strip():
        fail("instruction is empty")
    if task.reference is None and task.harness is None:
        fail("needs a PyTorch reference or a harness")
    if task.reference is not None and not callable(task.reference):
        fail(f"reference {task.reference!r} is not callable")
    difficulty = task.difficulty
    if isinstance(difficulty, bool) or not isinstance(difficulty, int) or not 1 <= difficulty <= 5:
        fail(f"difficulty {difficulty!r} is not an integer in 1..5")
    try:
        if not _defines_function(task.baseline_source, task.entry_point):
            fail(f"baseline_source does not define the entry point {task.entry_point!r}")
    except SyntaxError as error:
        fail(f"baseline_source does not parse: {error}")
    if task.harness is not None:
        return task
    if task.make_inputs is None or not callable(task.make_inputs):
        fail("make_inputs must be a callable (params, seed, device) -> tuple")
    _check_tolerance(task, fail)
    for label, cases in (("cases", task.cases), ("interpreter_cases", task.interpreter_cases)):
        _check_cases(task, label, cases, fail)
    for label, fn in (("flops", task.flops), ("bytes", task.bytes)):
        if fn is None or not callable(fn):
            fail(f"{label} must be a callable (params) -> float")
        for case in task.cases + task.interpreter_cases:
            value = fn(case.params)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                fail(f"{label}({case.name!r}) returned {value!r}; expected a finite number >= 0")
    return task


class Registry:
    """Tasks by name; every task is validated when registered."""

    def __init__(self, tasks=()):
        self._tasks: dict[str, Task] = {}
        for task in tasks:
            self.register(task)

    def register(self, task: Task) -> None:
        validate(task)
        if task.name in self._tasks:
            raise TaskError(f"task {task.name!r} is registered twice")
        self._tasks[task.name] = task

    def get(self, name: str) -> Task:
        try:
            return self._tasks[name]
        except KeyError:
            raise UnknownTaskError(
                f"unknown task {name!r}; known tasks: {', '.join(sorted(self._tasks))}"
            ) from None

    def tasks(self, suite: str | None = None) -> list[Task]:
        return [t for t in self._tasks.values() if suite is None or t.suite == suite]

    def __contains__(self, name: str) -> bool:
        return name in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)


def builtin() -> Registry:
    """Returns a registry of the built-in suite."""
    from benchmarks import builtin as builtin_suite

    return Registry(builtin_suite.TASKS)


def load(suite: str | None = None, path: str | None = None) -> Registry:
    """Returns the tasks of `suite` ("builtin" or an external suite read from `path`)."""
    if suite in (None, "builtin"):
        return builtin()
    from benchmarks import external

    return Registry(external.load_suite(suite, path))
