"""KernelBench (ScalingIntelligence/KernelBench) problems as Tasks.

Layout (any of these as --path): the KernelBench checkout, its `KernelBench/` folder, or one
`levelN/` folder. Each `levelN/<id>_<Name>.py` defines `class Model(nn.Module)`,
`get_inputs()` and `get_init_inputs()` (module-level sizes between them). Inputs are made on
the CPU; the harness moves them to the device.

Candidate contract: a module defining `class ModelNew`, constructed with
`get_init_inputs()` and called with `get_inputs()` like `Model`. The harness seeds torch the
same way before building `Model` and `ModelNew`, so layers that draw their weights in the same
order get the same weights (KernelBench's own rule), then compares outputs on fresh inputs
per trial. The baseline is the PyTorch `Model` itself (`ModelNew = Model`), which passes the
comparison but launches no Triton kernel. A correct candidate is timed by the judge on
`get_inputs()` made anew from its seeds (`kernelbench_models`), against `Model` timed so.
"""

from __future__ import annotations

import ast
import pathlib
import re

from benchmarks.external import common, kernelbench_models
from evo.records import Case, Task, parse_source

SUITE = "kernelbench"
SUBPATHS = ("KernelBench", "")
ENTRY_POINT = "ModelNew"
GPU_TRIALS = 5
INTERPRETER_TRIALS = 2
_REQUIRED = ("Model", "get_inputs", "get_init_inputs")


def _level_folders(root: pathlib.Path) -> list[pathlib.Path]:
    if re.fullmatch(r"level\d+", root.name):
        return [root]
    return sorted((p for p in root.glob("level*") if p.is_dir() and re.fullmatch(r"level\d+", p.name)),
                  key=lambda p: int(p.name[5:]))


def _instruction(source: str) -> str:
    return ("Write a Python module defining `class ModelNew(torch.nn.Module)`: the same "
            "constructor arguments and forward signature as `Model` below, the same outputs, "
            "computed with custom Triton kernels (@triton.jit) instead of PyTorch operators. "
            "ModelNew is built from `get_init_inputs()` after the same torch seed as Model, so "
            "create parameters in the same order as Model does.\n\n"
            f"Reference:\n```python\n{source}```\n")


def baseline_source(source: str) -> str:
    """Returns the problem module with `ModelNew` as the PyTorch `Model` itself."""
    return (source.rstrip() + "\n\n\nclass ModelNew(Model):\n"
            '    """The PyTorch reference as a candidate: correct, but no Triton kernel."""\n')


def load_file(path: pathlib.Path, level: int) -> Task:
    """Returns the Task of one KernelBench problem file."""
    source = path.read_text()
    defined = {node.name for node in parse_source(source).body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    missing = [name for name in _REQUIRED if name not in defined]
    if missing:
        raise ValueError(f"{path}: not a KernelBench problem, it lacks {', '.join(missing)}")
    name = common.task_name(f"level{level}_{path.stem}")
    return common.harness_task(
        SUITE, path, harness=source, sources=(source,),
        name=name,
        instruction=_instruction(source),
        baseline_source=baseline_source(source),
        entry_point=ENTRY_POINT,
        cases=tuple(Case(f"trial {k}", {"trial": k}) for k in range(GPU_TRIALS)),
        interpreter_cases=tuple(Case(f"trial {k}", {"trial": k}) for k in range(INTERPRETER_TRIALS)),
        difficulty=min(5, level + 1),
        tags=(f"level{level}",),
        dtypes=common.dtypes_in(source) or ("float32",),
        timing_calls=kernelbench_models.ModelCalls(task=name, problem_source=source),
    )


def load(path: str | None) -> list[Task]:
    """Returns every problem of every level folder, by level then problem id."""
    root = common.find_folder(path, SUITE, SUBPATHS, accept=lambda folder: bool(_level_folders(folder)))
    tasks = []
    for folder in _level_folders(root):
        files = sorted(folder.glob("*.py"), key=lambda p: (int(m.group()) if (m := re.match(r"\d+", p.name))
                                                         else 1 << 30, p.name))
        tasks.extend(load_file(file, int(folder.name[5:])) for file in files)
    return tasks
