"""The static gate (fitness.judge.policy): honest modules pass, each cheat is refused by its rule.

tests/cheats/gate/ holds one small module per cheating mechanism, headed by the task it
targets and where the gate must stop it (`# task: vector_add`, `# rule: launch-hook`,
`# line: 19`). Grow it whenever a model finds a new way around the gate: add a file.
"""

import dataclasses
import pathlib
import random
import re

import pytest
import torch

import cheats
from benchmarks import registry
from evo.records import make_candidate
from fitness.judge import policy
from fitness.judge.policy import rules as policy_rules
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
    the TritonBench fixture (a suite whose candidates may use torch on the host)."""
    if name == "kernelbench":
        return next(iter(_external("kernelbench", "kernelbench").values()))
    if name.startswith("tritonbench-revised/"):
        return _external("tritonbench-revised", "tritonbench")[name.split("/", 1)[1]]
    return BUILTIN.get(name)


def _entry(body, task="vector_add"):
    """Returns the verdict on a vector_add module whose entry point has `body` (4-space indented)."""
    source = HEAD + NOOP_KERNEL + "def vector_add(x, y):\n" + body
    return policy.check(source, _task(task))


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


def test_external_reference_kernels_pass_the_external_policy():
    tasks = [*_external("tritonbench-revised", "tritonbench").values(), *_external("rocm", "rocm").values()]
    assert tasks and all(policy.rules_for(t).name == "external" for t in tasks)
    for task in tasks:
        assert policy.check(task.baseline_source, task) is None, task.name


def test_a_kernelbench_triton_model_passes_and_the_pytorch_model_does_not():
    task = _task("kernelbench")
    triton_model = (FIXTURES / "candidates" / "kb_scale_and_add_triton.py").read_text()
    assert policy.check(triton_model, task) is None
    verdict = policy.check(task.baseline_source, task)  # `ModelNew = Model`: torch on the host
    assert verdict.rule == "host-torch" and "x * self.alpha + y" in verdict.detail


@pytest.mark.parametrize("path", GATE_CHEATS, ids=lambda p: p.stem)
def test_gate_cheat_is_refused_by_its_rule_at_its_line(path):
    fields = cheats.header(path)
    verdict = policy.check(path.read_text(), _task(fields["task"]))
    assert verdict is not None, f"{path.name} passed the gate"
    assert (verdict.rule, verdict.line) == (fields["rule"], int(fields["line"])), str(verdict)


def test_gate_cheats_cover_every_rule():
    rules = {cheats.header(path)["rule"] for path in GATE_CHEATS}
    assert rules == {"import", "dunder", "builtin", "module-attribute-store", "torch-internals", "host-read",
                     "host-torch", "grid-callable", "kernel-body", "launch-hook", "global-state", "decorator",
                     "class", "rebind", "entry-point", "private", "mutation"}


def test_violation_names_line_rule_and_code():
    verdict = _entry("    out = torch.empty_like(x)\n    x.item()\n    return out\n")
    assert str(verdict).startswith("line 12: [host-read] `x.item()` reads tensor values on the host")


def test_the_first_violation_in_source_order_is_reported():
    verdict = _entry("    eval('1')\n    return x.sum()\n")
    assert (verdict.line, verdict.rule) == (11, "builtin")


def test_builtin_policy_refuses_copies_the_external_policy_allows():
    source = HEAD + "def scale_shift(x, scale, shift):\n    x = x.contiguous().to(torch.float32)\n    return x\n"
    external = _external("tritonbench-revised", "tritonbench")["scale_shift"]
    builtin = dataclasses.replace(BUILTIN.get("vector_add"), entry_point="scale_shift")
    assert policy.check(source, external) is None
    assert policy.check(source, builtin).rule == "host-torch"


def test_task_torch_allowlist_widens_the_host_allowlist():
    task = dataclasses.replace(BUILTIN.get("row_sum"), torch_allowlist=("sum",))
    source = HEAD + "def row_sum(x):\n    return x.sum(dim=1)\n"
    assert policy.check(source, BUILTIN.get("row_sum")).rule == "host-torch"
    assert policy.check(source, task) is None


def test_host_arithmetic_on_tensors_is_refused_through_helpers():
    source = HEAD + "def _combine(a, b):\n    return a + b\n\n\ndef vector_add(x, y):\n    return _combine(x, y)\n"
    verdict = policy.check(source, BUILTIN.get("vector_add"))
    assert (verdict.line, verdict.rule) == (6, "host-torch")


def test_a_read_only_config_table_passes_and_a_written_one_does_not():
    table = "_CONFIGS = {'float16': (2048, 8), 'float32': (1024, 4)}\n\n\n"
    read = "    block, warps = _CONFIGS[str(x.dtype).split('.')[-1]]\n    return x\n"
    written = "    _CONFIGS['float64'] = (512, 4)\n    return x\n"
    assert policy.check(HEAD + table + "def vector_add(x, y):\n" + read, BUILTIN.get("vector_add")) is None
    verdict = policy.check(HEAD + table + "def vector_add(x, y):\n" + written, BUILTIN.get("vector_add"))
    assert verdict.rule == "global-state"


def test_autotune_heuristics_libdevice_and_device_queries_pass():
    source = HEAD + """from triton.language.extra import libdevice

_SMS_WITHOUT_CUDA = 132


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 512}, num_warps=4)], key=["n_elements"])
@triton.heuristics({"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})
@triton.jit
def _erf_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    for _ in tl.static_range(2):
        x = tl.where(x > -float("inf"), libdevice.erf(x), 0.0)
    tl.store(out_ptr + offsets, x.to(out_ptr.dtype.element_ty), mask=offsets < n_elements)


def _programs(x: torch.Tensor) -> int:
    if not torch.cuda.is_available():
        return _SMS_WITHOUT_CUDA
    return torch.cuda.get_device_properties(x.device).multi_processor_count


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    assert x.data_ptr() % 16 == 0, f"x must be 16-byte aligned, got stride {x.stride()}"
    out = torch.empty_like(x)
    n_elements = x.numel()

    def grid(meta):
        return (min(_programs(x), triton.cdiv(n_elements, meta["BLOCK_SIZE"])),)

    _erf_kernel[grid](x.view(-1), out.view(-1), n_elements)
    return out
"""
    verdict = policy.check(source, BUILTIN.get("vector_add"))
    assert verdict is not None and verdict.rule == "grid-callable"  # _programs(x) is not size arithmetic
    assert policy.check(source.replace("min(_programs(x), ", "min(132, "), BUILTIN.get("vector_add")) is None


def test_a_module_nested_too_deeply_is_refused_not_crashed_on():
    verdict = policy.check("x = 1" + " + 1" * 50000 + "\n", BUILTIN.get("vector_add"))
    assert verdict.rule == "nesting"


def test_python_methods_allowed_on_the_host_are_no_tensor_compute():
    """Drift guard: a method name shared by Python's types and torch.Tensor must be harmless."""
    shared = policy_rules.PYTHON_METHODS & set(dir(torch.Tensor))
    assert shared <= policy_rules.BUILTIN.tensor_methods | {"values"}, shared
