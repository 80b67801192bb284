"""The lint (fitness.judge.policy): honest modules pass, each contract breach is refused by its rule.

tests/cheats/gate/ holds one small module per breach the lint names, headed by the task it
targets and where the lint must stop it (`# task: vector_add`, `# rule: io`, `# line: 5`).
The lint is no boundary (docs/design.md): cheats that work by reflection, caches or hooks are
the judge's to catch, in tests/cheats/candidates.
"""

import dataclasses
import pathlib
import random
import re

import pytest

import cheats
from benchmarks import registry
from evo.records import make_candidate
from fitness.judge import policy
from operators import offline, retrieval
from operators.knowledge import SHEETS_DIR

BUILTIN = registry.builtin()
FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "external"
GATE_CHEATS = sorted((pathlib.Path(cheats.__file__).parent / "gate").glob("*.py"))
HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n"
NOOP_KERNEL = ("@triton.jit\ndef _noop_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n"
               "    pid = tl.program_id(axis=0)\n\n\n")


def _external(suite, folder):
    return {task.name: task for task in registry.load(suite, str(FIXTURES / folder)).tasks()}


def _task(name):
    """Returns a built-in task, the KernelBench fixture task, or `tritonbench-revised/<task>` of
    the TritonBench fixture."""
    if name == "kernelbench":
        return next(iter(_external("kernelbench", "kernelbench").values()))
    if name.startswith("tritonbench-revised/"):
        return _external("tritonbench-revised", "tritonbench")[name.split("/", 1)[1]]
    return BUILTIN.get(name)


def _entry(body):
    """Returns the verdict on a vector_add module whose entry point launches a kernel, then has `body`."""
    source = HEAD + NOOP_KERNEL + "def vector_add(x, y):\n    _noop_kernel[(1,)](x, 1, BLOCK_SIZE=16)\n" + body
    return policy.check(source, BUILTIN.get("vector_add"))


@pytest.mark.parametrize("task", BUILTIN.tasks(), ids=lambda t: t.name)
def test_every_builtin_baseline_passes(task):
    assert policy.check(task.baseline_source, task) is None


@pytest.mark.parametrize("exemplar", retrieval.load_exemplars(), ids=lambda e: e.name)
def test_every_exemplar_passes(exemplar):
    task = dataclasses.replace(BUILTIN.get("vector_add"), name=exemplar.name, entry_point=exemplar.name)
    assert policy.check(pathlib.Path(exemplar.path).read_text(), task) is None


def test_python_snippets_in_the_knowledge_sheets_pass():
    task = BUILTIN.get("vector_add")
    for sheet in sorted(SHEETS_DIR.glob("*.md")):
        for snippet in re.findall(r"```python\n(.*?)```", sheet.read_text(), flags=re.S):
            assert policy.check(snippet, task) is None, f"{sheet.name}: {policy.check(snippet, task)}"


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
def test_offline_children_of_every_baseline_pass(backend):
    for task in BUILTIN.tasks():
        parent = make_candidate(task.name, task.baseline_source)
        children = [offline.mutate(task, parent, random.Random(seed), backend) for seed in range(4)]
        children.append(offline.crossover(task, children[0], children[1], random.Random(7), backend))
        for child in children:
            assert policy.check(child.source, task) is None, f"{task.name} {child.strategy}"


def test_external_reference_kernels_pass():
    tasks = [*_external("tritonbench-revised", "tritonbench").values(), *_external("rocm", "rocm").values()]
    assert tasks
    for task in tasks:
        assert policy.check(task.baseline_source, task) is None, task.name


def test_a_kernelbench_triton_model_passes_and_the_pytorch_model_does_not():
    task = _task("kernelbench")
    triton_model = (FIXTURES / "candidates" / "kb_scale_and_add_triton.py").read_text()
    assert policy.check(triton_model, task) is None
    verdict = policy.check(task.baseline_source, task)  # `ModelNew = Model`: torch alone
    assert verdict.rule == "no-launch" and "`ModelNew` launches no Triton kernel" in verdict.detail


@pytest.mark.parametrize("path", GATE_CHEATS, ids=lambda p: p.stem)
def test_gate_cheat_is_refused_by_its_rule_at_its_line(path):
    fields = cheats.header(path)
    verdict = policy.check(path.read_text(), _task(fields["task"]))
    assert verdict is not None, f"{path.name} passed the gate"
    assert (verdict.rule, verdict.line) == (fields["rule"], int(fields["line"])), str(verdict)


def test_gate_cheats_cover_every_rule():
    assert {cheats.header(path)["rule"] for path in GATE_CHEATS} == {"no-launch", "io", "global-setting"}


def test_violation_names_line_rule_code_and_what_to_write_instead():
    verdict = _entry("    torch.set_default_dtype(torch.float64)\n    return x\n")
    assert str(verdict).startswith("line 12: [global-setting] `torch.set_default_dtype(torch.float64)` "
                                   "changes a process-wide setting")
    assert "pass options to the call" in verdict.detail


def test_the_first_violation_in_source_order_is_reported():
    verdict = _entry("    torch.backends.cudnn.benchmark = True\n    return open('x')\n")
    assert (verdict.line, verdict.rule) == (12, "global-setting")


def test_a_module_nested_too_deeply_is_refused_not_crashed_on():
    verdict = policy.check("x = 1" + " + 1" * 50000 + "\n", BUILTIN.get("vector_add"))
    assert verdict.rule == "nesting"
