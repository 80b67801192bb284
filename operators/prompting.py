"""Rendering the prompt templates in operators/prompts/ from records.

The words live in the .txt files, one per role, so a person can read and edit what the
model is told; this module only fills them in: metrics as text, traces trimmed (a gate
verdict never), history sorted. contract.txt, the gate's rules in words, is rendered from
the gate's own tables (fitness/judge/policy/contract.py) and shown in every role's prompt.
Each template has a golden test that pins its rendering verbatim.
"""

from __future__ import annotations

import functools
import math
import pathlib
from typing import Sequence

from evo.records import Candidate, Evaluation, Task

PROMPTS_DIR = pathlib.Path(__file__).parent / "prompts"


@functools.lru_cache(maxsize=None)
def template(name: str) -> str:
    """Returns the text of prompts/<name>.txt."""
    path = PROMPTS_DIR / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.stem for p in PROMPTS_DIR.glob("*.txt"))
        raise FileNotFoundError(f"no prompt template {name!r} in {PROMPTS_DIR}; known: {known}")
    return path.read_text()


def render(name: str, **fields: object) -> str:
    """Returns template `name` filled with `fields`; a missing field is an error naming it."""
    try:
        return template(name).format(**fields)
    except KeyError as error:
        raise KeyError(f"prompt template {name!r} needs field {error.args[0]!r}; given {sorted(fields)}") from None


def messages(user_prompt: str) -> list[dict[str, str]]:
    """Returns the chat messages of one call: the shared system prompt, then the role's prompt."""
    return [{"role": "system", "content": template("system")}, {"role": "user", "content": user_prompt}]


def generator_prompt(task: Task, knowledge: str, example: tuple[str, str] | None) -> str:
    """Returns the generator's prompt; `example` is (name, source) of the retrieved exemplar."""
    return render("generator", **_task_fields(task), knowledge=_knowledge(knowledge),
                  example=render("example_section", example_name=example[0], example_source=_ends_line(example[1]))
                  if example else "")


def reflector_prompt(task: Task, parent: Candidate, evaluation: Evaluation, max_trace_chars: int) -> str:
    """Returns the reflector's prompt: the failing module, its failure kind and what went wrong."""
    return render("reflector", **_task_fields(task), source=_ends_line(parent.source),
                  failure_kind=evaluation.failure_kind or "unknown", stage_reached=evaluation.stage_reached,
                  report=failure_report(evaluation, max_trace_chars))


def optimizer_prompt(task: Task, history: Sequence[tuple[Candidate, Evaluation]], knowledge: str,
                     max_history: int) -> str:
    """Returns the optimizer's prompt: the best `max_history` correct kernels, slowest first."""
    ranked = ascending(history)[-max_history:]
    sections = [_candidate_section(f"Kernel {i} of {len(ranked)}", c, e) for i, (c, e) in enumerate(ranked, 1)]
    return render("optimizer", **_task_fields(task), knowledge=_knowledge(knowledge), history="\n".join(sections))


def crossover_prompt(task: Task, parents: Sequence[tuple[Candidate, Evaluation]], knowledge: str) -> str:
    """Returns the crossover prompt: two correct kernels with their metrics."""
    sections = [_candidate_section(f"Kernel {label}", c, e) for label, (c, e) in zip("AB", parents)]
    return render("crossover", **_task_fields(task), knowledge=_knowledge(knowledge), parents="\n".join(sections))


def ascending(history: Sequence[tuple[Candidate, Evaluation]]) -> list[tuple[Candidate, Evaluation]]:
    """Returns history sorted by ascending speedup (unmeasured first), ties in the given order."""
    return sorted(history, key=lambda pair: -math.inf if pair[1].speedup is None else pair[1].speedup)


def describe_metrics(evaluation: Evaluation) -> str:
    """Returns an evaluation's performance as lines of text: speedup, roofline, latency per case."""
    lines = ["Speedup over the baseline: " + ("not measured" if evaluation.speedup is None
                                              else f"{evaluation.speedup:.3g}x")]
    if evaluation.roofline_fraction is not None:
        lines.append(f"Fraction of the roofline: {100 * evaluation.roofline_fraction:.1f}%")
    cases = []
    for i, name in enumerate(evaluation.case_names):
        if i < len(evaluation.latency_us):
            ref = (f" (baseline {evaluation.ref_latency_us[i]:.4g} us)" if i < len(evaluation.ref_latency_us)
                   else "")
            latency = evaluation.latency_us[i]
            cases.append(f"- {name}: not timed (far slower than the best on another case)"
                         if latency is None else f"- {name}: {latency:.4g} us{ref}")
    if cases:
        lines.append("Latency per case:")
        lines.extend(cases)
    if evaluation.latency_us and not evaluation.timing_meaningful:
        lines.append("(Timed on the CPU interpreter: the latencies do not predict GPU speed.)")
    return "\n".join(lines)


def failure_report(evaluation: Evaluation, max_trace_chars: int) -> str:
    """Returns per-case errors (for mismatches) and the trimmed error trace of a failed evaluation."""
    parts = []
    if evaluation.max_abs_err:
        lines = ["Per case, max absolute error / max relative error against the reference:"]
        for i, name in enumerate(evaluation.case_names):
            abs_err = evaluation.max_abs_err[i] if i < len(evaluation.max_abs_err) else math.nan
            rel_err = evaluation.rel_err[i] if i < len(evaluation.rel_err) else math.nan
            lines.append(f"- {name}: {abs_err:.3g} / {rel_err:.3g}")
        parts.append("\n".join(lines))
    # the gate's verdict is one line naming the line, the rule and the fix: never cut
    trace = evaluation.error_trace.strip() if evaluation.failure_kind == "policy_violation" \
        else trim_trace(evaluation.error_trace, max_trace_chars)
    if trace:
        parts.append(f"```text\n{_ends_line(trace)}```")
    return "\n\n".join(parts) if parts else "(no error text was recorded)"


def trim_trace(trace: str, max_chars: int) -> str:
    """Returns the last `max_chars` characters of a trace (the exception is at the end), marked if cut."""
    trace = trace.strip()
    if len(trace) <= max_chars:
        return trace
    cut = len(trace) - max_chars
    return f"[... {cut} characters trimmed ...]\n" + trace[cut:]


def strategy_name(notes: str) -> str:
    """Returns the name after a `Strategy:` line of a model's notes, else their first line."""
    lines = [line.strip() for line in notes.strip().splitlines() if line.strip()]
    for line in lines:
        if line.lower().startswith("strategy:"):
            return line.split(":", 1)[1].strip()
    return lines[0] if lines else ""


def _candidate_section(title: str, candidate: Candidate, evaluation: Evaluation) -> str:
    metrics = describe_metrics(evaluation)
    if candidate.strategy.strip():
        metrics = f"Strategy: {strategy_name(candidate.strategy)}\n" + metrics
    return render("candidate_section", title=title, metrics=metrics, source=_ends_line(candidate.source))


def _task_fields(task: Task) -> dict[str, str]:
    return {"task_name": task.name, "instruction": task.instruction.strip(), "entry_point": task.entry_point,
            "contract": template("contract")}


def _knowledge(knowledge: str) -> str:
    return render("knowledge_section", knowledge=knowledge.strip()) if knowledge.strip() else ""


def _ends_line(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"
