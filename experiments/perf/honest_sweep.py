"""Scores every honest file on a device: each built-in task's baseline and every file of the
honest corpus (tests/honest/<task>/*.py), and prints whether each is accepted and correct.
With --neighbours TASK it also times that task's baseline, as a candidate, alone and then
amid the whole cheat library in one evaluator: a hostile neighbour must not move an honest
kernel's speedup beyond timing noise.

    python3 experiments/perf/honest_sweep.py --device cuda --neighbours row_sum
"""

from __future__ import annotations

import argparse
import concurrent.futures
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import cheats  # noqa: E402
from benchmarks.registry import builtin  # noqa: E402
from cheats.tasks import ROW_SOFTMAX  # noqa: E402
from evo.records import make_candidate  # noqa: E402

LIMITS = {"import_s": 30, "compile_s": 120, "check_s": 30, "bench_s": 60}


def honest_files(tasks: dict) -> list[tuple[str, str, str]]:
    """Returns (label, task name, source) of every baseline and honest corpus file."""
    files = [(f"baseline/{name}", name, task.baseline_source) for name, task in tasks.items()
             if task.baseline_source]
    for path in sorted((ROOT / "tests" / "honest").glob("*/*.py")):
        if path.parent.name in tasks:
            files.append((str(path.relative_to(ROOT / "tests")), path.parent.name, path.read_text()))
    return files


def sweep(evaluator, pool, tasks: dict, files: list) -> int:
    """Evaluates every file; prints one line each; returns how many were correct."""
    def score(item):
        label, name, source = item
        return label, evaluator.evaluate(tasks[name], make_candidate(name, source))

    correct = 0
    for label, evaluation in pool.map(score, files):
        correct += evaluation.correct
        speedup = "-" if evaluation.speedup is None else f"{evaluation.speedup:.3f}x"
        last = (evaluation.error_trace.strip().splitlines() or [""])[-1][:150]
        print(f"{'OK ' if evaluation.correct else 'BAD'} {label}: {evaluation.failure_kind or 'correct'}"
              f" speedup {speedup}{'' if evaluation.correct else ' | ' + last}", flush=True)
    return correct


def neighbours(evaluator, pool, tasks: dict, task_name: str, repeats: int) -> None:
    """Prints the task baseline's speedups as a candidate, alone and amid the cheats."""
    task = tasks[task_name]

    def honest(index: int):  # a comment makes each copy a new candidate id, scored anew
        return evaluator.evaluate(task, make_candidate(task.name, task.baseline_source
                                                       + f"\n# copy {index}\n")).speedup

    alone = [honest(i) for i in range(repeats)]
    library = [p for p in sorted((ROOT / "tests" / "cheats").rglob("*.py"))
               if cheats.header(p).get("task") in tasks]
    futures = [pool.submit(lambda p=p: evaluator.evaluate(
        tasks[cheats.header(p)["task"]], make_candidate(cheats.header(p)["task"], p.read_text())))
        for p in library]
    amid = [pool.submit(honest, repeats + i) for i in range(repeats)]
    amid = [f.result() for f in amid]
    concurrent.futures.wait(futures)
    print(f"neighbours: {task_name} baseline as a candidate, speedup alone {alone}, "
          f"amid {len(library)} cheats {amid}; medians {statistics.median(alone):.3f}x / "
          f"{statistics.median(amid):.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--neighbours", metavar="TASK", help="also time TASK's baseline amid cheats")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from fitness.evaluator import Evaluator

    tasks = {task.name: task for task in builtin().tasks()} | {"row_softmax": ROW_SOFTMAX}
    files = honest_files(tasks)
    with Evaluator(args.device, workers=args.workers, timeouts=LIMITS) as evaluator, \
            concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        correct = sweep(evaluator, pool, tasks, files)
        print(f"honest files correct: {correct} of {len(files)}; device {evaluator.device.name}",
              flush=True)
        if args.neighbours:
            neighbours(evaluator, pool, tasks, args.neighbours, args.repeats)


if __name__ == "__main__":
    main()
