"""The lint's rules one by one: each breach is refused with its rule, and the honest near-miss
beside it passes.

The lint is no boundary (docs/design.md, "Fitness cascade and its trust boundary"): torch on
the host, reflection, caches and hooks are admitted here, on every suite; whether torch did
the task's work, or a cheat gained anything, is the judge's to say at run time.
tests/fixtures/honest_gate_external/ holds idioms of real model replies (host torch, launch
grids that call helpers).
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
HEAD = "import sys\n\nimport torch\nimport triton\nimport triton.language as tl\n\n\n"
KERNEL = ("@triton.jit\ndef _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
          "    pid = tl.program_id(axis=0)\n\n\n")
LAUNCH = "    _k[(1,)](x, out, 1, BLOCK=16)\n"


def _rule(source, task):
    verdict = policy.check(source, task)
    return verdict.rule if verdict else None


def _vector_add(body, before=""):
    """A vector_add module: `before` at module level, then the entry point with `body` and a launch."""
    return HEAD + KERNEL + before + "def vector_add(x, y):\n    out = torch.empty_like(x)\n" + body + LAUNCH + \
        "    return out\n"


@pytest.mark.parametrize("path", HONEST_EXTERNAL, ids=lambda p: p.stem)
def test_idioms_of_model_replies_pass_on_a_tritonbench_task(path):
    task = TRITONBENCH[path.read_text().splitlines()[0].split(":", 1)[1].strip()]
    assert policy.check(path.read_text(), task) is None


@pytest.mark.parametrize("line", [
    "    loss = out.mean()\n", "    avg = out.sum() / x.shape[0]\n", "    n = int(x.amax().item())\n",
    "    y = torch.clamp(x, min=0.0)\n", "    keep = torch.rand_like(x) > 0.5\n", "    x[x < 0] = 0.0\n",
    "    print(f'{x.shape} {float(x[0])}')\n", "    s = getattr(x, 'shape')\n",
])
def test_host_torch_is_admitted_on_every_suite(line):
    assert _rule(_vector_add(line), BUILTIN.get("vector_add")) is None
    row_max = HEAD + KERNEL + "def row_max(x):\n    out = torch.empty(x.shape[0])\n" + line + LAUNCH + \
        "    return out\n"
    assert _rule(row_max, TRITONBENCH["row_max"]) is None
    kernelbench = HEAD + KERNEL + "class ModelNew(torch.nn.Module):\n    def forward(self, x, y):\n" \
        "        out = torch.empty_like(x)\n" + line.replace("    ", "        ", 1) + \
        LAUNCH.replace("    ", "        ", 1) + "        return out\n"
    assert _rule(kernelbench, KERNELBENCH) is None


@pytest.mark.parametrize("before, body, rule", [
    # io: files, processes, environment, network
    ("import os\n\n\n", "    pid = os.getpid()\n", "io"),
    ("import subprocess\n\n\n", "    subprocess.run(['nvidia-smi'])\n", "io"),
    ("from pathlib import Path\n\n\n", "    Path('out.txt').write_text(str(x.shape))\n", "io"),
    ("", "    text = open('/proc/self/maps').read()\n", "io"),
    ("", "    torch.save(out, 'out.pt')\n", "io"),
    ("", "    m = __import__('socket')\n", "io"),
    ("import logging\nimport math\nimport warnings\n\n\n", "    logging.getLogger(__name__).info('n %d', x.numel())\n"
     "    warnings.warn(f'{math.ceil(x.numel() / 16)} blocks')\n    print('shape', x.shape, file=sys.stderr)\n", None),
    ("", "    open_ = x.is_contiguous()\n", None),
    ("def _blocks(open=4):\n    return open\n\n\n", "    n = _blocks(open=2)\n", None),
    # global-setting: process-wide state that outlives the call
    ("torch.backends.cuda.matmul.allow_tf32 = True\n\n\n", "", "global-setting"),
    ("", "    torch.backends.cudnn.benchmark = True\n", "global-setting"),
    ("", "    torch.set_default_dtype(torch.float64)\n", "global-setting"),
    ("", "    torch.set_float32_matmul_precision('high')\n", "global-setting"),
    ("", "    sys.setrecursionlimit(10000)\n", "global-setting"),
    ("", "    sys.path.insert(0, '/tmp')\n", "global-setting"),
    ("", "    triton.knobs.autotuning.print = True\n", "global-setting"),
    ("", "    torch.manual_seed(0)\n", "global-setting"),
    ("", "    tf32 = torch.backends.cuda.matmul.allow_tf32\n    dtype = torch.get_default_dtype()\n", None),
    ("", "    limit = sys.getrecursionlimit()\n    big = sys.maxsize\n", None),
    ("", "    with torch.cuda.device(x.device), torch.no_grad():\n        out.zero_()\n", None),
    ("class _Cfg:\n    def __init__(self):\n        self.block = 128\n\n\n",
     "    cfg = _Cfg()\n    cfg.block = 256\n    table = {}\n    table['n'] = 1\n", None),
])
def test_each_breach_is_refused_and_its_near_miss_passes(before, body, rule):
    assert _rule(_vector_add(body, before), BUILTIN.get("vector_add")) == rule


@pytest.mark.parametrize("before, body, rule", [
    ("", "    return x + y\n", "no-launch"),
    ("def _torch(x, y):\n    return x + y\n\n\n", "    return _torch(x, y)\n", "no-launch"),
    ("class _F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, y):\n        return x * y\n\n\n",
     "    return _F.apply(x, y)\n", "no-launch"),
    ("def _launch(x, out):\n    _k[(1,)](x, out, 1, BLOCK=16)\n\n\n",
     "    out = torch.empty_like(x)\n    _launch(x, out)\n    return out\n", None),
    ("def _run(kernel, x):\n    kernel[(1,)](x, x, 1, BLOCK=16)\n\n\n", "    _run(_k, x)\n    return x\n", None),
    ("_KERNELS = {torch.float32: _k}\n\n\n", "    _KERNELS[x.dtype][(1,)](x, x, 1, BLOCK=16)\n    return x\n", None),
    ("class _F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, y):\n"
     "        _k[(1,)](x, y, 1, BLOCK=16)\n        return y\n\n\n", "    return _F.apply(x, y)\n", None),
])
def test_the_entry_point_must_reach_a_kernel(before, body, rule):
    source = HEAD + KERNEL + before + "def vector_add(x, y):\n" + body
    assert _rule(source, BUILTIN.get("vector_add")) == rule


def test_no_launch_is_left_to_the_import_stage_when_the_entry_point_is_missing():
    source = "import torch\n\n\ndef vector_sum(x, y):\n    return x + y\n"
    assert policy.check(source, BUILTIN.get("vector_add")) is None
