"""The kernel-module contract in words, rendered from the lint's own tables (`rules`).

What the model is told and what the lint refuses must never drift apart, so the prompt's
contract is not written by hand: `render()` builds it from the same tables the lint reads.
operators/ may not import fitness/ (docs/design.md), so the rendering is kept as the prompt
template operators/prompts/contract.txt; a test fails when the two differ, and
`python -m fitness.judge.policy.contract` rewrites the template.
"""

from __future__ import annotations

import pathlib

from fitness.judge.policy import rules

TEMPLATE = pathlib.Path(__file__).parents[3] / "operators" / "prompts" / "contract.txt"


def render() -> str:
    """Returns the contract section of the prompts."""
    settings = sorted(rules.SETTING_CALLS - {"putenv", "unsetenv"})
    lines = [
        "# The contract (a quick static check refuses a module that breaks it, before it runs)",
        "",
        "- The entry point launches a @triton.jit kernel (kernel[grid](...)), itself or through the module's "
        "functions and classes; the task's work happens in Triton kernels. Host code checks inputs, allocates "
        "outputs, makes views and launches kernels; torch on the host may finish a kernel's work (sum a kernel's "
        "partial results, average per-row losses), and a run-time audit refuses a module where torch does the "
        "task's work.",
        "- An `if __name__ == \"__main__\":` self-test, functions nothing calls and the imports only they use "
        "are removed before the check (they never run on import); any other code is checked.",
        "- No file, process, environment or network access: no open(), torch.load/torch.save, and no imports of "
        + ", ".join(sorted(rules.IO_MODULES)) + ".",
        "- No process-wide settings: no assignments into a library's state (torch.backends flags, "
        "os.environ, triton.knobs, sys.modules), no calls of library set* functions (torch.set_default_dtype, "
        "torch.set_float32_matmul_precision, torch.cuda.set_device, sys.setrecursionlimit...) or of "
        + ", ".join(settings) + ", no sys.path changes; pass options to the call or use a `with` block "
        "that restores them (torch.cuda.device(...), torch.no_grad()).",
        "- Tasks of external suites (TritonBench, ROCm) may also do what the task's own reference module does.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    TEMPLATE.write_text(render())
