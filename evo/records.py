"""The plain records that cross rooms: Case, Task, Candidate, LLMUsage, Evaluation.

Standard library only, so every room (and every sandboxed worker process) can import
them without pulling in Ray, torch or openai. Records are frozen: change one with
`dataclasses.replace`. Callables they hold are module-level functions, so a Task
pickles into Ray actors and worker processes by reference.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import random
import threading
from typing import Any, Callable, Mapping

STAGES = ("syntax", "import", "compile", "run", "correct", "timed")
"""Cascade stages in order; `Evaluation.stage_reached` is the last one passed."""

FAILURE_KINDS = (
    "syntax_error", "import_error", "missing_entry_point", "signature_mismatch", "compile_error",
    "runtime_error", "illegal_memory_access", "timeout", "mismatch", "nan", "wrong_shape",
    "wrong_dtype", "inputs_modified", "no_triton_launch", "cheat_torch_compute",
    "cheat_cached_result", "cheat_implausible", "unsupported_on_backend", "worker_crash",
    "output_flood", "harness_error", "wrong_type", "cheat_background_work",
    "cheat_patched_harness", "policy_violation", "cheat_forged_timing", "nondeterministic",
    "out_of_memory",
)
"""Every value `Evaluation.failure_kind` may take (None means no failure)."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One input configuration of a task.

    Attributes:
      name: short human label, e.g. "4096x1000 fp16"; unique within a task's case set.
      params: what the task's `make_inputs`, `flops` and `bytes` read (sizes, dtype name...).
    """

    name: str
    params: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Task:
    """A kernel to write, with its ground truth and its roofline model; each field's meaning
    is beside it."""

    name: str  # unique task name; for built-in tasks also the entry point
    suite: str  # "builtin", "tritonbench-revised", "rocm", "kernelbench", ...
    instruction: str  # what an LLM is told: inputs, output, semantics, dtypes
    # PyTorch callable with the entry point's signature (the ground truth); None for tasks
    # that carry their own `harness`.
    reference: Callable[..., Any] | None
    baseline_source: str  # a correct Triton module defining `entry_point` (the speedup reference)
    entry_point: str  # function name a candidate module must define
    # `make_inputs(params, seed, device) -> tuple` of positional arguments; deterministic in
    # `seed`; values are random, never all zeros.
    make_inputs: Callable[..., tuple] | None
    cases: tuple[Case, ...]  # GPU-sized cases, big enough to fill a data-center GPU
    interpreter_cases: tuple[Case, ...]  # small cases for the CPU interpreter (few programs)
    # dtype name ("float32", "float16", "bfloat16", "int64"...) -> (atol, rtol), checked per
    # element as |out - ref| <= atol + rtol * |ref|. A dtype left out gets torch.testing's
    # default; an entry looser than that needs `tolerance_reason`.
    tolerance: Mapping[str, tuple[float, float]]
    flops: Callable[[Mapping[str, Any]], float] | None  # arithmetic operations of one call
    # Compulsory DRAM traffic of one call (reads + writes), in bytes.
    bytes: Callable[[Mapping[str, Any]], float] | None
    difficulty: int  # 1 (elementwise) .. 5 (attention)
    tags: tuple[str, ...] = ()  # free labels ("memory-bound", "reduction", "matmul", ...)
    dtypes: tuple[str, ...] = ()  # dtype names the cases cover
    # Extra aten op names (beyond allocation/views/copies/casts) the candidate may call
    # through torch for this task.
    torch_allowlist: tuple[str, ...] = ()
    tolerance_reason: str = ""  # why the tolerance is wider than torch.testing's defaults
    # For external suites, the suite's own test code (run isolated, like a candidate); None
    # for tasks with a PyTorch reference.
    harness: str | None = None
    runnable_on: tuple[str, ...] = ("cuda", "rocm", "interpreter")  # backends it can run on
    skip_reason: str = ""  # why a backend is missing from `runnable_on`, shown to the user
    source_path: str = ""  # where an external task was loaded from
    # For TritonBench-revised, GEAK-eval's performance definition of the task (its
    # `<task>_perf.py`, prepared by `benchmarks.external.geak_perf`): the inputs and the call
    # the candidate and the reference are timed on. None elsewhere.
    perf_harness: str | None = None
    # Why a correct candidate of this task is not timed ("" when it is): an external suite
    # that gives no way to call the kernel on performance inputs.
    untimed_reason: str = ""
    # Positions of the arguments the reference writes (a kernel filling an `out`): outputs
    # too, judged after the call and exempt from the inputs-unchanged check.
    written: tuple[int, ...] = ()
    # For external suites timed on the judge's clock, the recorder of the suite's timing
    # calls (`benchmarks.external.recorded.PerformanceCalls`), run in a checker; None elsewhere.
    timing_calls: Any = None
    # How the worker calls an entry point that is not a function taking the inputs (external
    # suites timed on the judge's clock): {"kind": "model", "init": [...], "seed": n} builds a
    # model class after seeding torch and calls it without autograd (KernelBench);
    # {"kind": "launch", "args": n, "meta": [names]} launches a kernel: the inputs are its n
    # arguments, then a 3-int grid, then its meta-parameters' values (ROCm); {"kind": "method",
    # "name": m} calls the entry point class's method m (an autograd Function's `apply`,
    # TritonBench-revised); {"kind": "keywords", "names": [...]} passes the last inputs by
    # those keywords (a keyword-only `out0`, TritonBench-revised); {"kind": "call_op", "perf", "module", "tree"} calls a performance
    # file's call_op whole on its input's leaves, the candidate as the kernel module it
    # imports (TritonBench-revised, where call_op calls the module twice). None: a function.
    entry_call: Mapping[str, Any] | None = None
    # External suites timed on the judge's clock: the reference leaves part of its outputs
    # unwritten on some performance inputs; the judge marks those places NaN in its runs of
    # it and compares a candidate's outputs only where it writes (`fitness.judge.fenced`).
    unwritten_free: bool = False

    def cases_for(self, backend: str) -> tuple[Case, ...]:
        """Returns the case set for a backend: small cases under the interpreter."""
        return self.interpreter_cases if backend == "interpreter" else self.cases


@dataclasses.dataclass(frozen=True)
class LLMUsage:
    """What one LLM call that produced a candidate cost."""

    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    request_hash: str = ""


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One kernel module proposed for a task.

    `island` and `generation` are set when the candidate is made and travel with it:
    placement reads these fields, never a "current island".
    """

    id: str
    task: str
    source: str
    parents: tuple[str, ...] = ()
    operator: str = "seed"
    generation: int = 0
    island: int = 0
    lineage_debug_count: int = 0
    strategy: str = ""
    llm: LLMUsage | None = None


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The fitness cascade's verdict on one candidate, on one device.

    Per-case lists are aligned with the case set the backend used (`case_names`).
    `speedup` is the geometric mean over every case of ref_latency/latency, and None unless
    every case was timed: a candidate surely slower than 1.2x the best seen on the
    representative case (the one the baseline is slowest on, timed first) is not timed on
    the others, so their latencies are None (null in Parquet) and so are its speedups. Only
    numbers measured on the same cases are ever compared (`comparable_speedup`).
    `sandboxed` is False only when the user turned the OS sandbox off (`[fitness] sandbox
    = "off"`): such a verdict was made on code that could reach the judge.
    """

    candidate_id: str
    stage_reached: str
    call_ok: bool
    correct: bool
    failure_kind: str | None = None
    error_trace: str = ""
    case_names: tuple[str, ...] = ()
    max_abs_err: tuple[float, ...] = ()
    rel_err: tuple[float, ...] = ()
    latency_us: tuple[float | None, ...] = ()
    ref_latency_us: tuple[float, ...] = ()
    latency_p20_us: tuple[float | None, ...] = ()
    latency_p80_us: tuple[float | None, ...] = ()
    speedup: float | None = None
    worst_speedup: float | None = None
    roofline_fraction: float | None = None
    timing_meaningful: bool = False
    sandboxed: bool = True
    device: str = ""
    backend: str = ""
    harness_version: str = ""
    compile_s: float = 0.0
    check_s: float = 0.0
    bench_s: float = 0.0

    @property
    def comparable_speedup(self) -> float | None:
        """Returns the speedup when it may rank against others: correct and timed on every
        case; None otherwise, whatever the `speedup` field says (rows written before speedups
        were nulled for partial timings carry one over the cases timed)."""
        return speedup_if_fully_timed(self.correct, self.speedup, self.latency_us)


def speedup_if_fully_timed(correct, speedup, latency_us) -> float | None:
    """Returns `speedup` if the row is correct and every entry of `latency_us` is a
    number, else None: the one rule every ranking applies, to records and Parquet rows."""
    if not correct or speedup is None or latency_us is None or len(latency_us) == 0:
        return None
    if any(latency is None or latency != latency for latency in latency_us):  # None or NaN
        return None
    return float(speedup) if speedup == speedup else None


_PARSE_LOCK = threading.Lock()


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, one thread at a time in this process. The evaluator judges candidates
    from several threads, and CPython 3.11 (3.11.7 here) keeps the AST constructor's
    recursion depth per interpreter, not per thread: two parses at once can fail with
    "SystemError: AST constructor recursion depth mismatch" on perfectly good modules. The
    lock only holds if every parse in the process takes it, so the project parses through
    here alone (tests/test_house_rules.py)."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


def normalize_source(source: str) -> str:
    """Returns source with comments, blank lines and formatting normalized away.

    Two candidates that differ only in comments or whitespace normalize equal, so they
    share an id and are scored once. Source that does not parse is only stripped.
    """
    try:
        return ast.unparse(parse_source(source))
    except (SyntaxError, ValueError, RecursionError):
        return "\n".join(line.rstrip() for line in source.strip().splitlines())


def candidate_id(source: str) -> str:
    """Returns the id of a candidate: a short hash of its normalized source."""
    return hashlib.sha256(normalize_source(source).encode()).hexdigest()[:16]


def make_candidate(task: str, source: str, **fields: Any) -> Candidate:
    """Returns a Candidate whose id is derived from its source."""
    return Candidate(id=candidate_id(source), task=task, source=source, **fields)


@dataclasses.dataclass(frozen=True)
class Breeding:
    """What an operator needs besides its parents, for one offspring slot: every operator is
    `async operator(breeding, parents) -> Child`, the one shape the toolbox registers.

    Attributes:
      history: the island's correct (Candidate, Evaluation) pairs, for the optimizer.
      rng: the island's seeded RNG (offline operators draw from it).
      backend: cuda | rocm | interpreter (offline operators pick backend-legal knobs).
      sample_index: unique per (generation, island, slot), part of the LLM request hash,
        so replay answers each slot with its own recorded reply.
    """

    task: Task
    client: Any
    context: Any
    history: tuple[tuple[Candidate, Evaluation], ...]
    rng: random.Random
    backend: str
    sample_index: int


@dataclasses.dataclass(frozen=True)
class Child:
    """An operator's result: the new candidate, or None and why there is none."""

    candidate: Candidate | None
    operator: str
    failure: str = ""
