"""The static gate's contract in words, rendered from its own tables (`rules`).

What the model is told it may write and what the gate allows must never drift apart, so the
prompt's contract is not written by hand: `render()` builds it from the same tables the gate
reads. operators/ may not import fitness/ (docs/design.md), so the rendering is kept as the
prompt template operators/prompts/contract.txt; a test fails when the two differ, and
`python -m fitness.judge.policy.contract` rewrites the template.
"""

from __future__ import annotations

import pathlib

from fitness.judge.policy import rules

TEMPLATE = pathlib.Path(__file__).parents[3] / "operators" / "prompts" / "contract.txt"
_READS = ("item", "tolist", "cpu", "numpy")


def render() -> str:
    """Returns the contract section of the prompts (built-in policy; the external additions last)."""
    builtin, external = rules.BUILTIN, rules.EXTERNAL
    modules = [_module(m) for m in sorted(rules.MODULE_NAMES) if m != "__future__"]
    torch_names = sorted(n for n in builtin.torch_names if n.removeprefix("torch.") not in rules.DTYPES)
    methods = sorted(builtin.tensor_methods - rules.SHAPE_QUERIES)
    reordering = sorted(rules.REORDERING_METHODS) + [f".{a}" for a in sorted(rules.REORDERING_ATTRIBUTES)]
    decorators = [f"@{d}" for d in sorted(rules.DECORATORS)]
    extra_torch = sorted(external.torch_names - builtin.torch_names)
    extra_methods = sorted(external.tensor_methods - builtin.tensor_methods)
    lines = [
        "# The contract (a static check refuses any module that breaks it, before it runs)",
        "",
        "- Imports: torch (and torch.nn), triton, triton.language (with libdevice), " + ", ".join(modules) + ". "
        "Log through a module logger (`logger = logging.getLogger(__name__)`; "
        + ", ".join(sorted(rules.LOGGER_METHODS)) + "), never with tensor values.",
        "- An `if __name__ == \"__main__\":` self-test, functions nothing calls and the imports only they use "
        "are removed before the check (they never run on import); any other code is checked.",
        "- Host code (outside @triton.jit) checks inputs, allocates outputs and launches kernels. On tensors it "
        "may call shape queries (" + ", ".join(sorted(rules.SHAPE_QUERIES)) + ") and layout views, copies and "
        "allocation (" + ", ".join(methods) + ", and .T, .mT); from torch only " + ", ".join(torch_names)
        + " and dtypes, and from Triton's runtime only the device queries "
        + ", ".join(q.removeprefix("triton.runtime.") for q in sorted(rules.DEVICE_QUERIES)) + ". "
        "All math happens in Triton kernels: no torch math on the host (x + y, x.sum(), torch.softmax), and no "
        "reads of tensor values (" + ", ".join(f".{r}()" for r in _READS) + ", int(x), print(x)).",
        "- In a data-movement task (transpose, flip2d...) the reordering views (" + ", ".join(reordering) + ") "
        "are the task's work: refused on the host, do it in a kernel.",
        "- Kernel bodies use only tl.* (and libdevice), other @triton.jit functions, "
        + ", ".join(sorted(rules.KERNEL_BUILTINS)) + " and tl.static_range; they write memory with tl.store.",
        "- A launch grid is a tuple, a lambda, or a function of this module named at the launch "
        "(`kernel[grid](...)`), returning sizes made of constants, arithmetic, meta[\"BLOCK\"], "
        + ", ".join(sorted(rules.GRID_CALLS)) + " and " + ", ".join(sorted(rules.GRID_METHODS)) + " queries "
        "(a host helper may compute a grid tuple before the launch).",
        "- Decorators: " + ", ".join(decorators) + " (or a decorator of the module that returns its inner "
        "function); no launch hooks (" + ", ".join(sorted(rules.LAUNCH_HOOK_KEYWORDS)) + "), no caches "
        "(functools.lru_cache, functools.cache).",
        "- Classes subclass " + ", ".join(sorted(builtin.class_bases)) + " or a class of the module; a class body "
        "holds methods and constant fields; instances set attributes only in __init__ (an autograd.Function's "
        "ctx is per call).",
        "- Nothing survives a call: no caches, no `global`, no mutable or tensor default arguments (default to "
        "None or a constant), no module-level dict or list written from a function (a read-only table of "
        "constants is fine), no rebinding an imported name. The entry point is a `def` (or `= _Fn.apply` of a "
        "torch.autograd.Function of the module).",
        "- No introspection: no dunder names or attributes besides __init__, __call__ and __all__, no "
        + ", ".join(sorted(rules.FORBIDDEN_BUILTINS - {"help", "exit", "quit"})) + " (as parameter names "
        "they are fine); no torch internals ("
        + ", ".join(rules.TORCH_INTERNALS[:6]) + "...).",
        "- No prints of tensors, no file, network or process access.",
        "- Tasks of external suites (TritonBench, ROCm, KernelBench) may also use "
        + ", ".join(extra_torch) + ", the tensor methods " + ", ".join(extra_methods) + ", torch.nn layers, "
        "and what the task's own reference module does on the host.",
    ]
    return "\n".join(lines) + "\n"


def _module(name: str) -> str:
    names = rules.MODULE_NAMES[name]
    return name if names is None else f"{name} ({', '.join(sorted(names))})"


if __name__ == "__main__":
    TEMPLATE.write_text(render())
