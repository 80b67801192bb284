"""The static gate in the other direction: honest idioms pass, the cheats beside each allowance do not.

tests/fixtures/honest_gate/ holds one small honest module per allowance (layout calls,
launch wrappers, plain-Python modules, never-run code), headed `# task: NAME`; the cheats
that must still fail next to each allowance are in tests/cheats/gate/ (lru_cache,
autograd_forward_torch, main_block_that_runs, transpose_contiguous_of_view...).
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


@pytest.mark.parametrize("block", [
    'if __name__ != "__main__":\n    vector_add = torch.add\n',
    'if "__main__" == "__main__":\n    vector_add = torch.add\n',
    '__name__ = "__main__"\nif __name__ == "__main__":\n    vector_add = torch.add\n',
    'if __name__ == "__main__":\n    pass\nelse:\n    vector_add = torch.add\n',
])
def test_a_main_looking_block_that_runs_is_judged(block):
    verdict = _verdict("def vector_add(x, y):\n    return torch.empty_like(x)\n\n\n" + block)
    assert verdict is not None and verdict.rule in ("dunder", "host-torch", "entry-point"), verdict


def test_a_submodule_import_stays_while_its_package_is_in_use():
    source = HEAD + "from triton.language.extra import libdevice\nimport numpy as np\n\n\n" + KERNEL + \
        "def vector_add(x, y):\n    _noop_kernel[(1,)](x, 1, BLOCK=16)\n    return x\n"
    stripped = runnable_source(source, BUILTIN.get("vector_add"))
    assert "from triton.language.extra import libdevice" in stripped and "numpy" not in stripped


def test_a_function_reached_only_from_the_entry_point_is_judged():
    verdict = _verdict("def _helper(x, y):\n    return x + y\n\n\ndef vector_add(x, y):\n    return _helper(x, y)\n")
    assert verdict.rule == "host-torch"


@pytest.mark.parametrize("body, rule", [
    ("import functools\n\n\n@functools.cache\ndef vector_add(x, y):\n    return x\n", "decorator"),
    ("from functools import lru_cache\n\n\ndef vector_add(x, y):\n    return lru_cache(x)\n", "import"),
    ("import collections\n\n\ndef vector_add(x, y):\n    return collections.OrderedDict()\n", "import"),
    ("import collections.abc\n\n\ndef vector_add(x, y):\n    return collections.OrderedDict()\n", "import"),
    ("import logging\nlogger = logging.getLogger(__name__)\n\n\ndef vector_add(x, y):\n"
     "    logger.info('%s', x)\n    return x\n", "host-read"),
    ("import logging\nlogger = logging.getLogger(__name__)\n\n\ndef vector_add(x, y):\n"
     "    logger.setLevel(10)\n    return x\n", "global-state"),
    ("def vector_add(input, y, type=None, max=None):\n    return input\n", None),
    ("def vector_add(input, y):\n    return vars()\n", "builtin"),
    ("def vector_add(x, y):\n    return x.permute(1, 0).contiguous()\n", None),
    ("import functools\n\n\ndef vector_add(x, y):\n    return functools.reduce(lambda a, b: a + b, [x, y])\n",
     "host-torch"),
    ("import dataclasses\n\n\n@dataclasses.dataclass\nclass C:\n    items: list = dataclasses.field("
     "default_factory=list)\n\n\n_C = C()\n\n\ndef vector_add(x, y):\n    items = _C.items\n"
     "    items.append(x)\n    return x\n", "global-state"),
    ("class C:\n    def __init__(self, block=128):\n        self.block = block or 64\n\n\n_C = C(256)\n\n\n"
     "def vector_add(x, y):\n    return torch.empty(_C.block)\n", None),
])
def test_allowances_stop_where_they_should(body, rule):
    verdict = _verdict(body)
    assert (verdict.rule if verdict else None) == rule, verdict


@pytest.mark.parametrize("task", ["transpose", "flip2d"])
def test_a_data_movement_task_refuses_reordering_views(task):
    verdict = _verdict(f"def {task}(x):\n    out = x.transpose(0, 1).contiguous()\n"
                       f"    _noop_kernel[(1,)](out, 1, BLOCK=16)\n    return out\n", task)
    assert verdict.rule == "host-torch" and "data movement" in verdict.detail, verdict
    assert _verdict(f"def {task}(x):\n    return x.contiguous().view(-1)\n", task) is None


def test_autograd_forward_params_are_tensors_and_ctx_is_per_call():
    cls = ("class _F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, y):\n"
           "        ctx.save_for_backward(x)\n        ctx.scale = 2\n        return {}\n\n\nvector_add = _F.apply\n")
    assert _verdict(cls.format("torch.empty_like(x)")) is None
    assert _verdict(cls.format("x * y")).rule == "host-torch"


@pytest.mark.parametrize("entry, rule", [
    ("vector_add = _make()\n", "entry-point"),
    ("vector_add = _holder.run\n", "entry-point"),
    ("vector_add = _impl\n", None),
])
def test_the_entry_point_is_a_function_not_a_factory_product(entry, rule):
    body = ("def _impl(x, y):\n    return torch.empty_like(x)\n\n\ndef _make():\n    return _impl\n\n\n"
            "class _Holder:\n    def run(self, x, y):\n        return _impl(x, y)\n\n\n_holder = _Holder()\n" + entry)
    verdict = _verdict(body)
    assert (verdict.rule if verdict else None) == rule, verdict


@pytest.mark.parametrize("grid, allowed", [
    ("(triton.cdiv(n, 16),)", True),
    ("lambda meta: (triton.cdiv(n, meta['BLOCK']),)", True),
    ("_grid(n)", True),
    ("_grid", True),
    ("grids[0]", False),
    ("_cfg.grid", False),
])
def test_launch_grids(grid, allowed):
    body = ("def _grid(n):\n    return (triton.cdiv(n, 16),)\n\n\n"
            "def vector_add(x, y):\n    out = torch.empty_like(x)\n    n = x.numel()\n"
            "    grids = [(1,)]\n    _cfg = None\n"
            f"    _noop_kernel[{grid}](out, n, BLOCK=16)\n    return out\n")
    if grid == "_grid":
        body = body.replace("def _grid(n):\n    return (triton.cdiv(n, 16),)", "def _grid(meta):\n    return (4,)")
    verdict = _verdict(body)
    assert (verdict is None) == allowed, verdict


def test_a_violation_says_line_rule_and_what_to_write_instead():
    verdict = _verdict("def vector_add(x, y, _cache=[]):\n    return x\n")
    assert str(verdict).startswith("line 10: [global-state] `[]` as a default argument")
    assert "default to None or a constant and build it inside" in verdict.detail


def test_an_external_task_admits_what_its_reference_does_and_nothing_more():
    suite = registry.load("tritonbench-revised", str(EXTERNAL / "tritonbench"))
    task = {t.name: t for t in suite.tasks()}["scale_shift"]
    assert policy.check(task.baseline_source, task) is None
    widened = "import itertools\n" + task.baseline_source + "\n_N = len(list(itertools.repeat(1, 2)))\n"
    extra = dataclasses.replace(task, baseline_source=widened)
    assert policy.check(widened, extra) is None
    assert policy.check(widened, task).rule == "import"


@pytest.mark.parametrize("body, rule", [
    ("def _run(kernel, out):\n    kernel[(1,)](out, 1, BLOCK=16)\n\n\n"
     "def vector_add(x, y):\n    _run(_noop_kernel, x)\n    return x\n", None),
    ("def _run(kernel, out, grid):\n    kernel[grid](out, 1, BLOCK=16)\n\n\n"
     "def vector_add(x, y):\n    _run(_noop_kernel, x, (1,))\n    return x\n", "grid-callable"),
    ("def vector_add(x, y):\n    k = _noop_kernel\n    k[(1,)](x, 1, BLOCK=16)\n    return x\n", "launch-hook"),
    ("_KERNELS = {torch.float32: _noop_kernel}\n\n\n"
     "def vector_add(x, y):\n    _KERNELS[x.dtype][(1,)](x, 1, BLOCK=16)\n    return x\n", None),
    ("_KERNELS = {torch.float32: _noop_kernel}\n\n\n"
     "def vector_add(x, y, grid=None):\n    _KERNELS[x.dtype][grid](x, 1, BLOCK=16)\n    return x\n",
     "grid-callable"),
    ("def vector_add(x, y):\n    def g(meta):\n        return (1,)\n\n"
     "    _noop_kernel.run(x, 1, BLOCK=16, grid=g, warmup=False)\n    return x\n", "launch-hook"),
])
def test_kernels_handed_around_are_launched_with_checked_grids(body, rule):
    verdict = _verdict(body)
    assert (verdict.rule if verdict else None) == rule, verdict


@pytest.mark.parametrize("body", [
    "for vector_add in (torch.empty_like,):\n    pass\n",
    "vector_add, _other = torch.empty_like, 1\n",
    "try:\n    import triton.language as tp\nexcept ImportError:\n    import torch as tp\n\n\n"
    "def vector_add(x, y):\n    return tp.empty_like(x)\n",
])
def test_names_bound_twice_at_import_are_refused(body):
    verdict = _verdict(body)
    assert verdict is not None and verdict.rule in ("entry-point", "rebind"), verdict


@pytest.mark.parametrize("suite", [pytest.param("tritonbench-revised", marks=pytest.mark.slow),
                                   "rocm"])
def test_every_geak_task_refuses_what_its_own_reference_never_does(suite):
    """Widened by its reference, each external policy still refuses a module, torch math and
    a cache the reference never uses (GEAK-eval's suites, as `evo gate --references` reads them)."""
    tasks = registry.load(suite, str(external_suites.suite("GEAK-eval"))).tasks()
    additions = ["import subprocess\n_RUN = subprocess.run\n", "_SOLVE = torch.linalg.solve\n",
                 "_CACHE = {}\n\n\ndef _remember(key, value):\n    _CACHE[key] = value\n\n\n_remember(1, 2)\n"]
    admitted = [(task.name, extra) for task in tasks for extra in additions
                if policy.check(task.baseline_source + "\n\n" + extra, task) is None]
    assert len(tasks) > 30 and not admitted, admitted
