"""The lint in the other direction: honest idioms pass, and code that never runs is not judged.

tests/fixtures/honest_gate/ holds one small honest module per idiom (layout calls, launch
wrappers, plain-Python modules, never-run code, torch finishing a kernel's work on the host,
a grid lambda calling a helper), headed `# task: NAME`.
"""

import dataclasses
import pathlib

import pytest

import external_suites
from benchmarks import registry
from evo.records import make_candidate
from fitness.judge import policy
from fitness.judge.policy.strip import runnable_source

BUILTIN = registry.builtin()
HONEST = sorted((pathlib.Path(__file__).parent / "fixtures" / "honest_gate").glob("*.py"))
EXTERNAL = pathlib.Path(__file__).parent / "fixtures" / "external"
HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n"
KERNEL = ("@triton.jit\ndef _noop_kernel(out_ptr, n, BLOCK: tl.constexpr):\n"
          "    pid = tl.program_id(axis=0)\n\n\n")
ENTRY = "def vector_add(x, y):\n    _noop_kernel[(1,)](x, 1, BLOCK=16)\n    return x\n\n\n"


def _task_of(path):
    return BUILTIN.get(path.read_text().splitlines()[0].split(":", 1)[1].strip())


def _verdict(body, task="vector_add"):
    return policy.check(HEAD + KERNEL + body, BUILTIN.get(task))


@pytest.mark.parametrize("path", HONEST, ids=lambda p: p.stem)
def test_honest_module_passes(path):
    assert policy.check(path.read_text(), _task_of(path)) is None


def test_stripping_blanks_never_run_code_and_keeps_line_numbers():
    path = next(p for p in HONEST if p.stem == "row_sum_self_test")
    source = path.read_text()
    stripped = runnable_source(source, _task_of(path))
    assert stripped.count("\n") == source.count("\n")
    assert "if __name__" not in stripped and "def test_row_sum" not in stripped
    assert "import numpy" not in stripped and "import time" not in stripped
    assert stripped.splitlines().index("def row_sum(x):") == source.splitlines().index("def row_sum(x):")
    assert make_candidate("row_sum", source).id != make_candidate("row_sum", stripped).id


def test_the_worker_loads_the_stripped_source(fitness_evaluator):
    """A module importing something that does not exist, only for its self-test, loads and is correct."""
    task = BUILTIN.get("vector_add")
    source = task.baseline_source + "\n\nif __name__ == \"__main__\":\n    import no_such_module_here\n" \
        "    no_such_module_here.run(vector_add)\n"
    source = "import no_such_module_either\n" + source + "\n\ndef test_it():\n    no_such_module_either.check()\n"
    evaluation = fitness_evaluator.evaluate(task, make_candidate(task.name, source))
    assert evaluation.correct, evaluation.error_trace
    assert evaluation.candidate_id == make_candidate(task.name, source).id


def test_a_self_test_that_writes_files_is_removed_before_the_check():
    block = ('if __name__ == "__main__":\n    import os\n'
             '    torch.save(vector_add(1, 2), os.path.join("/tmp", "x.pt"))\n')
    assert _verdict(ENTRY + block) is None


@pytest.mark.parametrize("block", [
    'if __name__ != "__main__":\n    open("/tmp/x")\n',
    'if "__main__" == "__main__":\n    open("/tmp/x")\n',
    '__name__ = "__main__"\nif __name__ == "__main__":\n    open("/tmp/x")\n',
    'if __name__ == "__main__":\n    pass\nelse:\n    open("/tmp/x")\n',
])
def test_a_main_looking_block_that_runs_is_judged(block):
    verdict = _verdict(ENTRY + block)
    assert verdict is not None and verdict.rule == "io", verdict


def test_a_submodule_import_stays_while_its_package_is_in_use():
    source = HEAD + "from triton.language.extra import libdevice\nimport numpy as np\n\n\n" + KERNEL + ENTRY
    stripped = runnable_source(source, BUILTIN.get("vector_add"))
    assert "from triton.language.extra import libdevice" in stripped and "numpy" not in stripped


def test_a_function_reached_only_from_the_entry_point_is_judged_and_an_unused_one_is_not():
    helper = "def _dump(x):\n    open('/tmp/x', 'w').write(str(x))\n\n\n"
    assert _verdict(helper + ENTRY.replace("    return x", "    _dump(x)\n    return x")).rule == "io"
    assert _verdict(helper + ENTRY) is None


@pytest.mark.parametrize("grid", [
    "(triton.cdiv(n, 16),)",
    "lambda meta: (triton.cdiv(n, meta['BLOCK']),)",
    "lambda meta: (_cdiv(n, meta['BLOCK']),)",
    "_grid(n)",
    "_grid",
    "grids[0]",
])
def test_any_launch_grid_passes(grid):
    body = ("def _cdiv(a, b):\n    return (a + b - 1) // b\n\n\n"
            "def _grid(n):\n    return (triton.cdiv(n, 16),)\n\n\n"
            "def vector_add(x, y):\n    out = torch.empty_like(x)\n    n = x.numel()\n    grids = [(1,)]\n"
            f"    _noop_kernel[{grid}](out, n, BLOCK=16)\n    return out\n")
    assert _verdict(body) is None


def test_an_external_task_admits_the_breaches_its_reference_commits_and_no_others():
    suite = registry.load("tritonbench-revised", str(EXTERNAL / "tritonbench"))
    task = {t.name: t for t in suite.tasks()}["scale_shift"]
    assert policy.check(task.baseline_source, task) is None
    widened = task.baseline_source + "\ntorch.backends.cuda.matmul.allow_tf32 = True\n"
    extra = dataclasses.replace(task, baseline_source=widened)
    assert policy.check(widened, extra) is None
    assert policy.check(widened, task).rule == "global-setting"
    assert policy.check(widened + "torch.backends.cudnn.benchmark = True\n", extra).rule == "global-setting"


@pytest.mark.parametrize("suite", [pytest.param("tritonbench-revised", marks=pytest.mark.slow), "rocm"])
def test_every_geak_task_refuses_breaches_its_own_reference_never_commits(suite):
    """Each external task's lint still refuses I/O and settings the reference never uses
    (GEAK-eval's suites, as `evo gate --references` reads them)."""
    tasks = registry.load(suite, str(external_suites.suite("GEAK-eval"))).tasks()
    additions = ["import subprocess\n_RUN = subprocess.run\n", "torch.set_default_dtype(torch.float64)\n",
                 "import sys\nsys.setrecursionlimit(100000)\n", "_TEXT = open('/etc/hostname').read()\n"]
    admitted = [(task.name, extra) for task in tasks for extra in additions
                if policy.check(task.baseline_source + "\n\n" + extra, task) is None]
    assert len(tasks) > 30 and not admitted, admitted
