"""Scores every cheat of tests/cheats on a device and prints whether each is caught as its
header says: the cheat library of the CPU tests, run on the hardware a campaign uses, GPU-only
mechanisms (`device: cuda`) included; elsewhere those are listed as not applicable. A cheat
whose header says `caught-as: none` (its harm is to others) is right when scored correct.

    python3 experiments/perf/cheat_sweep.py --device cuda              # the whole cascade
    python3 experiments/perf/cheat_sweep.py --device cuda --ungated    # the later layers alone
    python3 experiments/perf/cheat_sweep.py --device cuda --neighbour row_sum

`--neighbour TASK` also scores TASK's baseline as a candidate twice alone before the sweep and
twice amid the cheats: a hostile neighbour must not move an honest kernel's speedup beyond
timing noise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import cheats  # noqa: E402
from benchmarks.registry import builtin  # noqa: E402
from cheats.tasks import ROW_SOFTMAX  # noqa: E402
from evo.records import make_candidate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--ungated", action="store_true", help="switch the static gate off")
    parser.add_argument("--neighbour", metavar="TASK", help="time TASK's baseline alone and amid")
    args = parser.parse_args()
    from fitness import Evaluator, Settings

    tasks = {task.name: task for task in builtin().tasks()} | {"row_softmax": ROW_SOFTMAX}
    listed = [p for p in sorted((ROOT / "tests" / "cheats").rglob("*.py"))
              if cheats.header(p).get("task") in tasks
              and cheats.expected_kinds(cheats.header(p), args.ungated, "any")]
    limits = {"import_s": 30, "compile_s": 60, "check_s": 30, "bench_s": 60}
    caught = 0
    with Evaluator(Settings(device=args.device, workers=args.workers, timeouts=limits,
                            static_gate=not args.ungated)) as evaluator, \
            concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        backend = evaluator.device.backend
        paths = [p for p in listed if cheats.applies_to(p, backend)]
        for path in listed:
            if path not in paths:
                print(f"N/A {os.path.relpath(path, ROOT / 'tests' / 'cheats')}: device "
                      f"{cheats.header(path)['device']} only, this is {backend}", flush=True)
        def score(path):
            task = tasks[cheats.header(path)["task"]]
            return path, evaluator.evaluate(task, make_candidate(task.name, path.read_text()))

        def honest(copy: int) -> float | None:  # a comment makes each copy a new candidate
            task = tasks[args.neighbour]
            return evaluator.evaluate(task, make_candidate(
                task.name, f"{task.baseline_source}\n# copy {copy}\n")).speedup

        alone = [honest(copy) for copy in range(2)] if args.neighbour else []
        half = sum(p.parent.name == "candidates" for p in paths) // 2  # amid runtime cheats
        scored = [pool.submit(score, path) for path in paths[:half]]
        amid = [pool.submit(honest, 2 + copy) for copy in range(2)] if args.neighbour else []
        scored += [pool.submit(score, path) for path in paths[half:]]
        for path, evaluation in (future.result() for future in scored):
            want = cheats.expected_kinds(cheats.header(path), args.ungated, backend)
            good = ("none" if evaluation.correct else evaluation.failure_kind) in want
            caught += good
            last = (evaluation.error_trace.strip().splitlines() or [""])[-1][:150]
            print(f"{'OK ' if good else 'BAD'} {os.path.relpath(path, ROOT / 'tests' / 'cheats')}: "
                  f"want {'|'.join(sorted(want))}, got {evaluation.failure_kind} at {evaluation.stage_reached}, "
                  f"speedup {evaluation.speedup} | {last}",
                  flush=True)
    print(f"caught as expected: {caught} of {len(paths)}; static gate "
          f"{'off' if args.ungated else 'on'}; device {evaluator.device.name}")
    if args.neighbour:
        print(f"neighbour: {args.neighbour} baseline as a candidate, speedup alone "
              f"{alone}, amid the cheats {[future.result() for future in amid]}")


if __name__ == "__main__":
    main()
