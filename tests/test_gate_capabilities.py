"""The static gate as a capability policy (issue 42 item 2): each rule stops a reach, and the
honest code beside it passes.

Reach beyond the candidate's own data is refused by construction: private attributes of what
the module did not define, evaluation paths, mutation of objects the call did not make
(kernels, loggers, parameters), module objects handed to a launch, tensors hidden in
containers. Torch on the host is admitted for TritonBench and ROCm tasks (whether it does the
task's work is measured at run time); the capability rules hold there too. The cheats are in
tests/cheats/gate/ (run by test_fitness_policy.py); tests/fixtures/honest_gate_external/ holds
host-torch idioms of real model replies, written for these tests.
"""

import pathlib

import pytest

from benchmarks import registry
from fitness.judge import policy

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
HONEST_EXTERNAL = sorted((FIXTURES / "honest_gate_external").glob("*.py"))
BUILTIN = registry.builtin()
TRITONBENCH = {t.name: t for t in registry.load("tritonbench-revised", str(FIXTURES / "external" / "tritonbench")).tasks()}
KERNELBENCH = next(iter(registry.load("kernelbench", str(FIXTURES / "external" / "kernelbench")).tasks()))
HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
KERNEL = ("@triton.jit\ndef _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
          "    pid = tl.program_id(axis=0)\n\n\n")
LAUNCH = "    _k[(1,)](x, out, 1, BLOCK=16)\n"


def _rule(source, task):
    verdict = policy.check(source, task)
    return verdict.rule if verdict else None


def _vector_add(body, before=""):
    """A vector_add module: `before` at module level, then the entry point with `body`."""
    return HEAD + KERNEL + before + "def vector_add(x, y):\n    out = torch.empty_like(x)\n" + body + LAUNCH + \
        "    return out\n"


def _row_max(body, before=""):
    return HEAD + KERNEL + before + "def row_max(x):\n    out = torch.empty(x.shape[0])\n" + body + LAUNCH + \
        "    return out\n"


@pytest.mark.parametrize("path", HONEST_EXTERNAL, ids=lambda p: p.stem)
def test_host_torch_of_model_replies_passes_on_a_tritonbench_task(path):
    task = TRITONBENCH[path.read_text().splitlines()[0].split(":", 1)[1].strip()]
    assert policy.check(path.read_text(), task) is None


@pytest.mark.parametrize("line", [
    "    loss = out.mean()\n", "    avg = out.sum() / x.shape[0]\n", "    n = int(x.amax().item())\n",
    "    y = torch.clamp(x, min=0.0)\n", "    keep = torch.rand_like(x) > 0.5\n", "    x[x < 0] = 0.0\n",
])
def test_host_torch_is_admitted_on_tritonbench_and_refused_on_builtin_and_kernelbench(line):
    assert _rule(_row_max(line), TRITONBENCH["row_max"]) is None
    assert _rule(_vector_add(line), BUILTIN.get("vector_add")) in ("host-torch", "host-read")
    kernelbench = HEAD + KERNEL + "class ModelNew(torch.nn.Module):\n    def forward(self, x: torch.Tensor, y):\n" + \
        line.replace("    ", "        ", 1) + "        return x\n"
    assert _rule(kernelbench, KERNELBENCH) in ("host-torch", "host-read")


@pytest.mark.parametrize("before, body, rule", [
    ("", "    f = torch.nn.functional.pad(x, (0, 1))\n", None),
    ("_SOLVE = torch.linalg.solve\n\n\n", "", "host-torch"),          # torch kept as a value hides the call
    ("", "    torch.manual_seed(0)\n", "host-torch"),                    # global torch state
    ("", "    torch.set_default_dtype(torch.float64)\n", "host-torch"),
    ("", "    s = torch._C._get_tracing_state()\n", "torch-internals"),
])
def test_torch_called_by_name_but_not_kept_or_used_to_change_state(before, body, rule):
    assert _rule(_row_max(body, before), TRITONBENCH["row_max"]) == rule


@pytest.mark.parametrize("task", ["vector_add", "row_max"])
@pytest.mark.parametrize("before, body, rule", [
    ("class _C:\n    def __init__(self):\n        self._n = 1\n\n    def _size(self):\n        return self._n\n\n\n",
     "    n = _C()._size()\n", "private"),                                  # private reached on an instance, not self
    ("class _C:\n    def __init__(self):\n        self._n = 1\n\n    def size(self):\n        return self._n + self._more()\n\n"
     "    def _more(self):\n        return 0\n\n\n", "    n = _C().size()\n", None),
    ("class _M(torch.nn.Module):\n    def size(self):\n        return len(self._parameters)\n\n\n",
     "    n = _M().size()\n", "private"),                                   # a library base's internals
    ("class _C:\n    def _evaluate(self):\n        return 0\n\n\n",
     "    n = out._evaluate()\n", "private"),
    ("", "    shapes = []\n    shapes.append(x.shape)\n    table = {}\n    table['n'] = 1\n", None),
    ("", "    shapes = list(x.shape)\n    shapes[0] = 1\n", None),
    ("def _grow(rows):\n    rows.append(1)\n\n\n", "    _grow([])\n", "mutation"),        # a parameter
    ("", "    (x.shape, [])[1].append(1)\n", "mutation"),                                   # a call's result
    ("", "    hooks = [].copy()\n    hooks.append(1)\n", "mutation"),                      # not provably fresh
    ("import logging\n\n\n", "    logging.getLogger('k').filters.append(out)\n", "mutation"),
    ("import logging\n\n\n", "    logging.getLogger('k').info('%d', 1)\n", None),
    ("import logging\n\n\n", "    f = logging.getLogger('k').handlers\n", "global-state"),
    ("", "    ok = hasattr(torch, 'float8_e4m3fn') and hasattr(x, 'is_cuda')\n", None),
    ("", "    ok = hasattr(x, 'is_' + 'cuda')\n", "builtin"),
    ("", "    ok = hasattr(x, '_version')\n", "builtin"),
    ("import typing\n\n\n", "    r = typing.ForwardRef('x')\n", "import"),
    ("class _P:\n    def __init__(self, t):\n        self.t = t\n\n\n",
     "    _k[(1,)](_P(x), out, 1, BLOCK=16)\n", "launch-hook"),
    ("class _P:\n    def __init__(self, t):\n        self.t = t\n\n\n",
     "    p = _P(x)\n    _k[(1,)](x, out, 1, BLOCK=p)\n", "launch-hook"),
    ("class _P:\n    def __init__(self, t):\n        self.t = t\n\n\n",
     "    p = _P(x)\n    _k[(1,)](p.t, out, 1, BLOCK=16)\n", None),               # its tensor is fine
])
def test_capability_rules(task, before, body, rule):
    source = _vector_add(body, before) if task == "vector_add" else _row_max(body, before)
    assert _rule(source, BUILTIN.get(task) if task == "vector_add" else TRITONBENCH[task]) == rule


def test_a_kernel_may_not_be_a_default_argument():
    source = HEAD + KERNEL + "def vector_add(x, y, k=_k):\n    out = torch.empty_like(x)\n" \
        "    k[(1,)](x, out, 1, BLOCK=16)\n    return out\n"
    verdict = policy.check(source, BUILTIN.get("vector_add"))
    assert (verdict.rule, verdict.line) == ("launch-hook", 11), verdict


@pytest.mark.parametrize("body, rule", [
    ("    n = float(x.shape[0]) + int(x.numel())\n", None),
    ("    for name, t in (('x', x), ('y', y)):\n        assert t.is_contiguous(), f'{name}'\n", None),
    ("    n = float((x,)[0][0])\n", "host-read"),
    ("    n = float([x, y][1][0])\n", "host-read"),
    ("    n = float({'x': x}['x'][0])\n", "host-read"),
    ("    a, = (x,)\n    n = float(a[0])\n", "host-read"),
    ("    a, b = [x, y]\n    n = float(b[0])\n", "host-read"),
    ("    held = []\n    held.append(x)\n    n = int(held[0][0])\n", "host-read"),
    ("    for v in x:\n        n = float(v)\n", "host-read"),
    ("    for i, v in enumerate(y):\n        n = bool(v)\n", "host-read"),
    ("    [out][0][0] = 1.0\n", "host-torch"),
    ("    box = {'o': out}\n    box['o'][0] = 1.0\n", "host-torch"),
])
def test_tensors_are_tracked_through_containers_unpacking_and_loops(body, rule):
    assert _rule(_vector_add(body), BUILTIN.get("vector_add")) == rule


def test_a_tensor_kept_on_an_instance_is_a_tensor_in_its_other_methods():
    source = HEAD + KERNEL + ("class _Box:\n    def __init__(self, t):\n        self.t = t\n        self.n = 4\n\n"
                              "    def first(self):\n        return float(self.t[0]) if self.n else 0.0\n\n\n"
                              "def vector_add(x, y):\n    out = torch.empty_like(x)\n    v = _Box(x).first()\n"
                              + LAUNCH + "    return out\n")
    verdict = policy.check(source, BUILTIN.get("vector_add"))
    assert verdict.rule == "host-read" and "self.t[0]" in verdict.detail, verdict
