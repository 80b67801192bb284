"""Golden tests: each role's prompt rendered from fixed records, compared verbatim.

If a template changes on purpose, update the expected text here in the same change: these
tests exist so that nobody changes what the model is told by accident.
"""

import pytest

from evo.records import Evaluation, Task, make_candidate
from fitness.judge import policy
from fitness.judge.policy import contract as policy_contract
from operators import prompting

TASK = Task(name="scale", suite="test", instruction="Write `scale(x) -> out` with out = 2 * x for a 1-D float32 tensor x.",
            reference=None, baseline_source="", entry_point="scale", make_inputs=None, cases=(), interpreter_cases=(),
            tolerance={}, flops=None, bytes=None, difficulty=1)
SOURCE = "def scale(x):\n    return x * 2\n"
CONTRACT = prompting.template("contract")
FAST = make_candidate("scale", SOURCE, strategy="Strategy: wider blocks\nUse 2048.")
SLOW = make_candidate("scale", SOURCE + "# v2\n")
FAST_EVAL = Evaluation(FAST.id, "timed", True, True, case_names=("N=1", "N=1025"), latency_us=(5.0, 7.25),
                       ref_latency_us=(5.0, 8.0), speedup=1.05, roofline_fraction=0.42, timing_meaningful=True)
SLOW_EVAL = Evaluation(SLOW.id, "timed", True, True, case_names=("N=1", "N=1025"), latency_us=(6.0, 9.0),
                       ref_latency_us=(5.0, 8.0), speedup=0.86, timing_meaningful=False)

EXPECTED_GENERATOR = """\
# Task: scale

Write `scale(x) -> out` with out = 2 * x for a 1-D float32 tensor x.

Write a Python module that defines `scale` as described above, computing it with Triton kernels.

<contract>

# Hardware notes

Warp = 32 threads.

# An example Triton kernel

This kernel (`relu`) solves a different problem: take its structure and Triton idioms, not its semantics.

```python
def relu(x):
    return x
```

# Answer

Explain your plan in a few sentences, then give the whole module in one ```python code block.
"""

EXPECTED_REFLECTOR = """\
# Task: scale

Write `scale(x) -> out` with out = 2 * x for a 1-D float32 tensor x.

# A candidate that fails

The module below was rejected with failure `mismatch`; it got as far as the `correct` stage.

```python
def scale(x):
    return x * 2
```

# What the test harness reported

Per case, max absolute error / max relative error against the reference:
- N=1: 0 / 0
- N=1025: 0.5 / 1

```text
AssertionError: boom
```

<contract>

# Answer

Start with `Analysis:` and explain in a few sentences what causes the failure. Then give the whole corrected module, still defining `scale`, in one ```python code block.
"""

# FAST and SLOW with their metrics, as both the optimizer and the crossover prompt show them.
FAST_SECTION = """\
Strategy: wider blocks
Speedup over the baseline: 1.05x
Fraction of the roofline: 42.0%
Latency per case:
- N=1: 5 us (baseline 5 us)
- N=1025: 7.25 us (baseline 8 us)

```python
def scale(x):
    return x * 2
```
"""
SLOW_SECTION = """\
Speedup over the baseline: 0.86x
Latency per case:
- N=1: 6 us (baseline 5 us)
- N=1025: 9 us (baseline 8 us)
(Timed on the CPU interpreter: the latencies do not predict GPU speed.)

```python
def scale(x):
    return x * 2
# v2
```
"""

EXPECTED_OPTIMIZER = f"""\
# Task: scale

Write `scale(x) -> out` with out = 2 * x for a 1-D float32 tensor x.

<contract>

# Correct kernels so far, slowest first

## Kernel 1 of 2

{SLOW_SECTION}
## Kernel 2 of 2

{FAST_SECTION}
# Answer

All kernels above are correct; they are listed from the slowest to the fastest. Work out what made the faster ones faster, then write a kernel faster than the last one. Begin with a line `Strategy: <a short name for your optimisation>`, explain it in a few sentences, then give the whole module, still defining `scale`, in one ```python code block.
"""

EXPECTED_SYSTEM = """\
You are an expert GPU kernel engineer. You write Triton kernels that are correct first and fast second.

Rules for every answer:
- Give the complete Python module in exactly one ```python code block: imports, the @triton.jit kernel(s) and the wrapper function the task names. Text outside the block is read by people, never run.
- The wrapper checks its inputs, allocates the output, launches at least one Triton kernel and returns the result. Compute in Triton, not in PyTorch, and never call a reference implementation.
- Mask every load and store at the edges (sizes are not always powers of two); give a masked load the identity of the reduction that consumes it as `other=`.
- Compute in float32 inside the kernel: load, `.to(tl.float32)`, compute, and cast on the store with `.to(out_ptr.dtype.element_ty)`.

"""

EXPECTED_CROSSOVER = f"""\
# Task: scale

Write `scale(x) -> out` with out = 2 * x for a 1-D float32 tensor x.

<contract>

# Hardware notes

Warp = 32 threads.

# Two correct kernels

## Kernel A

{FAST_SECTION}
## Kernel B

{SLOW_SECTION}
# Answer

Both kernels are correct. Write one kernel that combines the best ideas of both (for example the memory access pattern of one with the tiling or launch configuration of the other) so that it is faster than either. Begin with a line `Strategy: <a short name for the combination>`, explain it in a few sentences, then give the whole module, still defining `scale`, in one ```python code block.
"""


def _with_contract(expected):
    """The goldens mark where the contract goes; its own text is pinned by test_contract_*."""
    return expected.replace("<contract>\n", CONTRACT)


def test_contract_is_the_gate_tables_rendered():
    assert CONTRACT == policy_contract.render(), "run: python -m fitness.judge.policy.contract"
    assert "launches a @triton.jit kernel" in CONTRACT and "subprocess" in CONTRACT and "torch.backends" in CONTRACT


def test_a_policy_violation_reaches_the_reflector_verbatim():
    source = "import torch\n\n\ndef scale(x):\n    return x.sum() * 2\n"
    violation = str(policy.check(source, TASK))
    failing = Evaluation("c1", "syntax", False, False, "policy_violation", violation)
    prompt = prompting.reflector_prompt(TASK, make_candidate("scale", source), failing, 20)
    assert f"```text\n{violation}\n```" in prompt and violation.startswith("line 4: [no-launch]")


def test_system_prompt():
    assert prompting.template("system") == EXPECTED_SYSTEM


def test_generator_prompt():
    example = ("relu", "def relu(x):\n    return x\n")
    assert prompting.generator_prompt(TASK, "Warp = 32 threads.", example) == _with_contract(EXPECTED_GENERATOR)


def test_reflector_prompt():
    failing = Evaluation("c1", "correct", True, False, "mismatch", "AssertionError: boom", ("N=1", "N=1025"),
                         (0.0, 0.5), (0.0, 1.0))
    assert prompting.reflector_prompt(TASK, make_candidate("scale", SOURCE), failing, 100) == _with_contract(EXPECTED_REFLECTOR)


def test_optimizer_prompt_lists_history_slowest_first():
    assert prompting.optimizer_prompt(TASK, [(FAST, FAST_EVAL), (SLOW, SLOW_EVAL)], "", 8) == _with_contract(EXPECTED_OPTIMIZER)


def test_crossover_prompt():
    pairs = [(FAST, FAST_EVAL), (SLOW, SLOW_EVAL)]
    assert prompting.crossover_prompt(TASK, pairs, "Warp = 32 threads.") == _with_contract(EXPECTED_CROSSOVER)


def test_long_traces_keep_their_end():
    trace = "x" * 50 + "ValueError: the real cause"
    trimmed = prompting.trim_trace(trace, 30)
    assert trimmed.endswith("ValueError: the real cause") and "46 characters trimmed" in trimmed


def test_missing_template_field_is_named():
    with pytest.raises(KeyError, match="needs field 'entry_point'"):
        prompting.render("generator", task_name="t", instruction="i", knowledge="", example="")
