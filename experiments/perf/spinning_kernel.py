"""One candidate whose kernel never ends, scored among ordinary ones (issue 49): do the others'
verdicts arrive as fast as without it, and does it end as a timeout within its limit plus the
watchdog's grace? Prints every verdict's arrival, then one summary line per claim.

Two rounds on one Evaluator, after the baseline itself is scored (the task's baseline timing
is paid there): the ordinary candidates alone, then as many others (new sources, so new ids)
with the spinning one sent first. An
ordinary candidate is vector_add's baseline with a constant of its own; the spinning one
waits in its kernel for a flag it loads and nothing ever sets.

    python3 experiments/perf/spinning_kernel.py --device cuda --workers 8 --ordinary 20 --timeout 10
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SPINNING_SOURCE = '''import torch
import triton
import triton.language as tl


@triton.jit
def _add_when_ready(x_ptr, y_ptr, out_ptr, flag_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    ready = tl.load(flag_ptr, volatile=True)
    while ready == 0:  # nothing ever sets the flag: the kernel never ends
        # volatile: a plain load may be read once, and the compiled kernel then ended (H200)
        ready = tl.load(flag_ptr, volatile=True)
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    n_elements = out.numel()
    _add_when_ready[(triton.cdiv(n_elements, 1024),)](x, y, out, flag, n_elements, BLOCK_SIZE=1024)
    return out
'''


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One evaluation as the caller saw it: `arrived_s` from the round's start, `took_s` from
    its own submission (a queue wait included)."""

    label: str
    kind: str
    stage: str
    arrived_s: float
    took_s: float
    compile_s: float
    trace: str


def ordinary_sources(task, count: int, first: int = 0) -> list[str]:
    """Returns `count` ordinary candidates: the task's baseline, each with a constant of its own."""
    return [f"{task.baseline_source.rstrip()}\n\n_VARIANT = {first + at}\n" for at in range(count)]


def score_round(evaluator, task, sources: list[tuple[str, str]], workers: int) -> list[Verdict]:
    """Scores every (label, source) with `workers` at once, in order; returns the verdicts in
    the order they arrived."""
    from evo.records import make_candidate

    start = time.monotonic()

    def score(item) -> Verdict:
        label, source = item
        sent = time.monotonic()
        evaluation = evaluator.evaluate(task, make_candidate(task.name, source))
        now = time.monotonic()
        return Verdict(label, evaluation.failure_kind or "correct", evaluation.stage_reached,
                       now - start, now - sent, evaluation.compile_s, evaluation.error_trace)

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(score, item) for item in sources]
        return sorted((future.result() for future in futures), key=lambda v: v.arrived_s)


def rounds(evaluator, task, ordinary: int, workers: int) -> tuple[list[Verdict], list[Verdict]]:
    """Returns the verdicts of the ordinary candidates alone, then of others with the spinning
    one sent first, once the baseline was scored."""
    score_round(evaluator, task, [("baseline", task.baseline_source)], 1)
    alone = score_round(evaluator, task, [(f"ordinary-{at}", source) for at, source in
                                          enumerate(ordinary_sources(task, ordinary))], workers)
    beside = score_round(evaluator, task, [("spinning", SPINNING_SOURCE)] + [
        (f"ordinary-{ordinary + at}", source)
        for at, source in enumerate(ordinary_sources(task, ordinary, first=ordinary))], workers)
    return alone, beside


def last_ordinary_s(verdicts: list[Verdict]) -> float:
    return max(v.arrived_s for v in verdicts if v.label != "spinning")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--ordinary", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=10.0, help="every stage's limit, s")
    args = parser.parse_args()
    from benchmarks.registry import builtin
    from fitness import Evaluator, Limits, Settings
    from fitness.processes import watchdog

    task = builtin().get("vector_add")
    started = time.monotonic()
    with Evaluator(Settings(device=args.device, workers=args.workers,
                            timeouts=Limits.uniform(args.timeout))) as evaluator:
        print(f"device {evaluator.device.name} ({evaluator.device.backend}), {args.workers} "
              f"workers, every stage limit {args.timeout:g} s, watchdog grace "
              f"{watchdog.GRACE_S:g} s; started in {time.monotonic() - started:.1f} s", flush=True)
        alone, beside = rounds(evaluator, task, args.ordinary, args.workers)
        for name, verdicts in (("alone", alone), ("beside the spinning one", beside)):
            print(f"-- {name}: arrived_s took_s label verdict")
            for v in verdicts:
                print(f"{v.arrived_s:8.2f} {v.took_s:7.2f} {v.label:12} {v.kind} at {v.stage}")
        spinning = next(v for v in beside if v.label == "spinning")
        wrong = [v.label for v in alone + beside if v.label != "spinning" and v.kind != "correct"]
        bound_s = args.timeout + watchdog.GRACE_S
        print(f"spinning: {spinning.kind} at {spinning.stage}, its walk {spinning.took_s:.2f} s, "
              f"import-to-first-call {spinning.compile_s:.2f} s (first call's limit "
              f"{args.timeout:g} s + grace {watchdog.GRACE_S:g} s = {bound_s:g} s); "
              f"{(spinning.trace.strip().splitlines() or [''])[-1][:160]}")
        before = sum(v.arrived_s < spinning.arrived_s for v in beside if v.label != "spinning")
        print(f"ordinary: last verdict {last_ordinary_s(alone):.2f} s alone, "
              f"{last_ordinary_s(beside):.2f} s beside it ({before} of {args.ordinary} before "
              f"its verdict); not correct: {wrong or 'none'}")
        stats = evaluator.stats()
        print(f"device_ok {stats['device_ok']} {stats['device_error']} respawns "
              f"{stats['respawns']} watchdog ends {watchdog.WATCHDOG.ended}", flush=True)


if __name__ == "__main__":
    main()
