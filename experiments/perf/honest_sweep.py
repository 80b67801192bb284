"""Scores every honest file on a device: each built-in task's baseline and every file of the
honest corpus (tests/honest/<task>/*.py), and prints whether each is accepted and correct.

    python3 experiments/perf/honest_sweep.py --device cuda [--out honest.txt]

Lines print as verdicts come back. With --out each line is appended there too, and the files
a line there already names are skipped: a sweep cut short by a device call's limit resumes
in the next call from the file it left.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

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


def sweep(evaluator, pool, tasks: dict, files: list, out: pathlib.Path | None = None) -> int:
    """Evaluates every file; prints one line each as it comes back (appended to `out` too);
    returns how many were correct."""
    def score(item):
        label, name, source = item
        return label, evaluator.evaluate(tasks[name], make_candidate(name, source))

    correct = 0
    for future in concurrent.futures.as_completed([pool.submit(score, item) for item in files]):
        label, evaluation = future.result()
        correct += evaluation.correct
        speedup = "-" if evaluation.speedup is None else f"{evaluation.speedup:.3f}x"
        last = (evaluation.error_trace.strip().splitlines() or [""])[-1][:150]
        line = (f"{'OK ' if evaluation.correct else 'BAD'} {label}: "
                f"{evaluation.failure_kind or 'correct'} speedup {speedup}"
                f"{'' if evaluation.correct else ' | ' + last}")
        print(line, flush=True)
        if out is not None:
            with out.open("a") as handle:
                handle.write(line + "\n")
    return correct


def already_swept(out: pathlib.Path | None) -> dict[str, bool]:
    """Returns the labels a previous sweep's `out` names, each with whether it was correct."""
    seen = {}
    for line in out.read_text().splitlines() if out is not None and out.exists() else []:
        verdict, _, rest = line.partition(" ")
        label = rest.strip().split(":")[0]
        if verdict in ("OK", "BAD") and label:
            seen[label] = verdict == "OK"
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="lines appended here; files it already names are skipped")
    args = parser.parse_args()
    from fitness import Evaluator, Settings

    tasks = {task.name: task for task in builtin().tasks()} | {"row_softmax": ROW_SOFTMAX}
    files = honest_files(tasks)
    earlier = already_swept(args.out)
    left = [item for item in files if item[0] not in earlier]
    with Evaluator(Settings(device=args.device, workers=args.workers,
                            timeouts=LIMITS)) as evaluator, \
            concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        correct = sweep(evaluator, pool, tasks, left, args.out) + sum(earlier.values())
        print(f"honest files correct: {correct} of {len(files)} ({len(earlier)} from earlier "
              f"calls); device {evaluator.device.name}", flush=True)


if __name__ == "__main__":
    main()
