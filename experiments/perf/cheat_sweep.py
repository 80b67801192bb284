"""Scores every cheat of tests/cheats on a device and prints whether each is caught as its
header says: the cheat library of the CPU tests, run on the hardware a campaign uses.

    python3 experiments/perf/cheat_sweep.py --device cuda              # the whole cascade
    python3 experiments/perf/cheat_sweep.py --device cuda --ungated    # the later layers alone
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


def expected_kind(header: dict, ungated: bool) -> str | None:
    """Returns the verdict a cheat file promises (None: it has none for this mode)."""
    if ungated:
        return header.get("second-layer")
    return header.get("caught-as") or ("policy_violation" if "rule" in header else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--ungated", action="store_true", help="switch the static gate off")
    args = parser.parse_args()
    from fitness.evaluator import Evaluator

    tasks = {task.name: task for task in builtin().tasks()} | {"row_softmax": ROW_SOFTMAX}
    paths = [p for p in sorted((ROOT / "tests" / "cheats").rglob("*.py"))
             if cheats.header(p).get("task") in tasks
             and expected_kind(cheats.header(p), args.ungated)]
    limits = {"import_s": 30, "compile_s": 60, "check_s": 30, "bench_s": 60}
    caught = 0
    with Evaluator(args.device, workers=args.workers, timeouts=limits,
                   static_gate=not args.ungated) as evaluator, \
            concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        def score(path):
            task = tasks[cheats.header(path)["task"]]
            return path, evaluator.evaluate(task, make_candidate(task.name, path.read_text()))

        for path, evaluation in pool.map(score, paths):
            want = expected_kind(cheats.header(path), args.ungated)
            good = not evaluation.correct and evaluation.failure_kind == want
            caught += good
            last = (evaluation.error_trace.strip().splitlines() or [""])[-1][:150]
            print(f"{'OK ' if good else 'BAD'} {os.path.relpath(path, ROOT / 'tests' / 'cheats')}: "
                  f"want {want}, got {evaluation.failure_kind} at {evaluation.stage_reached} | {last}",
                  flush=True)
    print(f"caught as expected: {caught} of {len(paths)}; static gate "
          f"{'off' if args.ungated else 'on'}; device {evaluator.device.name}")


if __name__ == "__main__":
    main()
