"""Scores every file of tests/compromised on a device and checks each cheat's verdict is no
better than its real one: not correct, or no faster than its honest twin (the same kernel,
scored in the same session) beyond the bound: 5% per case of 20 us or more on a GPU, 1.5x
overall under the interpreter (whose wall-clock timings scatter by tens of percent).

    python3 experiments/perf/compromised_sweep.py --device cuda --out compromised.jsonl
    python3 experiments/perf/compromised_sweep.py --device interpreter --only c03 --only c07

Classes 10 and 11 harm others and get Evaluators of their own: 10 on one worker (twin
alone, the cheat, the twin again: the second twin must be correct and no slower beyond the
bound), 11 beside the twin on copies of the task (`compromised.scored_beside`: a baseline
timed while it burns must be no slower beyond the bound than one timed quietly, per case of
20 us or more on a GPU). One JSON row per candidate is appended to --out as it finishes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import compromised  # noqa: E402
from benchmarks.registry import builtin  # noqa: E402

GPU_BOUND, GPU_MIN_US, INTERPRETER_BOUND = 1.05, 20.0, 1.5
LIMITS = {"import_s": 60, "compile_s": 120, "check_s": 60, "bench_s": 120}


def geomean(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def faster_than(cheat, twin, interpreted: bool) -> tuple[float | None, bool]:
    """Returns (cheat speedup / twin speedup, whether it is within the bound); a cheat not
    correct is within it. On a GPU the bound holds per case of GPU_MIN_US or more."""
    if not cheat.correct:
        return None, True
    if not twin.correct:
        return None, False
    if interpreted:
        slower = compromised.slower_by(cheat, twin)
        return slower and 1 / slower, slower is not None and slower >= 1 / INTERPRETER_BOUND
    per_case = [tl / cl for cl, tl in zip(cheat.latency_us, twin.latency_us)
                if cl and tl and tl >= GPU_MIN_US]
    return max(per_case, default=None), bool(per_case) and max(per_case) <= GPU_BOUND


def inflated(quiet_us, beside_us, interpreted: bool) -> float | None:
    """Returns how much slower the baseline timed beside a burner is than timed quietly:
    the geometric mean over cases under the interpreter, the worst case of GPU_MIN_US or
    more on a GPU (the bound's cases: below them a batch's fixed cost and its jitter are
    much of a run, and the mean over all four cases read 1.111 in RESULTS.md §32 without
    saying which case moved)."""
    pairs = [(b, a) for b, a in zip(beside_us or [], quiet_us or []) if a and b]
    if interpreted:
        return geomean([b / a for b, a in pairs]) if pairs else None
    return max((b / a for b, a in pairs if a >= GPU_MIN_US), default=None)


def row(path, evaluation, twin, interpreted: bool, **extra) -> dict:
    from fitness.judge import clock

    fields = compromised.header(path)
    ratio, within = faster_than(evaluation, twin, interpreted)
    ok = within and not (fields["expect"] == "wrong" and evaluation.correct)
    return {"file": path.name, "class": fields["class"], "expect": fields["expect"],
            "correct": evaluation.correct, "failure_kind": evaluation.failure_kind,
            "speedup": evaluation.speedup, "twin_speedup": twin.speedup, "ratio": ratio,
            "latency_us": evaluation.latency_us, "ref_latency_us": evaluation.ref_latency_us,
            "twin_latency_us": twin.latency_us, "turn": clock.TURN, "wake": clock.WAKE, **extra,
            "pass": ok and extra.get("pass", True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "interpreter", "auto"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, help="JSON lines, one per candidate")
    parser.add_argument("--only", action="append", default=[], help="file names containing this")
    parser.add_argument("--wake", choices=("front", "spin"), default=None,
                        help="how the worker's stream waits for `go` (`fitness.judge.clock.WAKE`)")
    parser.add_argument("--turn", choices=("done", "go"), default=None,
                        help="when the checker queues its turn (`fitness.judge.clock.TURN`)")
    args = parser.parse_args()
    from fitness import Evaluator, Settings
    from fitness.judge import clock

    clock.TURN = args.turn or clock.TURN
    clock.WAKE = args.wake or clock.WAKE

    def settings(workers: int):
        return Settings(device=args.device, workers=workers, timeouts=LIMITS, static_gate=False)

    paths = [p for p in compromised.cheats() if not args.only or any(o in p.name for o in args.only)]
    rows: list[dict] = []

    def emit(item: dict) -> None:
        rows.append(item)
        print(f"[{len(rows)}/{len(paths)}] {item['file']}: correct={item['correct']} "
              f"({item['failure_kind']}) speedup={item['speedup']} twin={item['twin_speedup']} "
              f"{'PASS' if item['pass'] else 'FAIL'}", flush=True)
        if args.out:
            with args.out.open("a") as handle:
                handle.write(json.dumps(item, default=str) + "\n")

    own = [p for p in paths if compromised.class_number(p) not in (10, 11)]
    with Evaluator(settings(args.workers)) as evaluator:
        interpreted = evaluator.device.backend == "interpreter"
        twins = {name: compromised.scored(evaluator, compromised.DIR / name)
                 for name in sorted({compromised.header(p)["twin"] for p in paths})}
        print("twins: " + ", ".join(f"{n} {t.correct} {t.speedup}" for n, t in twins.items()), flush=True)
        with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
            futures = {pool.submit(compromised.scored, evaluator, p): p for p in own}
            for future in concurrent.futures.as_completed(futures):
                path = futures[future]
                emit(row(path, future.result(), twins[compromised.header(path)["twin"]], interpreted))
    bound = INTERPRETER_BOUND if interpreted else GPU_BOUND
    for path in paths:
        task = builtin().get(compromised.header(path)["task"])
        if compromised.class_number(path) == 10:
            with Evaluator(settings(1)) as evaluator:
                rounds, slower = compromised.next_slower_than_alone(evaluator, task, path, bound)
            alone, cheat, after = rounds[0]
            ok = bool(all(r[2].correct and r[2].speedup for r in rounds)
                      and slower is not None and slower <= bound)
            emit(row(path, cheat, alone, interpreted, next_correct=after.correct,
                     next_speedup=after.speedup, next_slower=slower, rounds=len(rounds),
                     **{"pass": ok}))
        elif compromised.class_number(path) == 11:
            with Evaluator(settings(args.workers)) as evaluator:
                compromised.scored(evaluator, compromised.twin(path), "warm-up")
                quiet, beside, cheat, seen = compromised.scored_beside(evaluator, task, path)
            inflation = inflated(quiet.ref_latency_us, beside.ref_latency_us, interpreted)
            emit(row(path, cheat, quiet, interpreted, baseline_inflation=inflation, import_seen=seen,
                     quiet_ref_latency_us=quiet.ref_latency_us,
                     beside_ref_latency_us=beside.ref_latency_us,
                     **{"pass": seen and inflation is not None and inflation <= bound}))
    print(f"\n{'cheat':<50} {'class':<6} {'correct':<8} {'speedup':>8} {'twin':>8} {'ratio':>7}  verdict")
    for item in sorted(rows, key=lambda r: int(r["class"].split()[0])):
        fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else "-"  # noqa: E731
        note = (f" next={item['next_correct']}/{fmt(item['next_speedup'])}"
                f" slower x{fmt(item['next_slower'])}" if "next_correct" in item
                else f" baseline x{fmt(item['baseline_inflation'])}" if "baseline_inflation" in item else "")
        if not item["correct"]:  # how it was caught: a compile error is not a caught cheat
            note += f" ({item['failure_kind']})"
        print(f"{item['file']:<50} {item['class'].split()[0]:<6} {str(item['correct']):<8} "
              f"{fmt(item['speedup']):>8} {fmt(item['twin_speedup']):>8} {fmt(item['ratio']):>7}  "
              f"{'PASS' if item['pass'] else 'FAIL'}{note}")
    print(f"bound: {'1.5x overall (interpreter)' if interpreted else '5% per case of 20 us or more'}; "
          f"{sum(r['pass'] for r in rows)} of {len(rows)} pass; {time.strftime('%F %T')}")


if __name__ == "__main__":
    main()
