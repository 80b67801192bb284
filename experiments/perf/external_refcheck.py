"""Counts, per external suite, the tasks loaded / runnable here / whose reference passes its
own harness on this device (issue 7's closing numbers).

"Reference passes" means the task's reference (GEAK: the kernel file's own kernel code;
KernelBench: the PyTorch Model) runs the suite's harness in a sandboxed worker without
error (pytest's in-harness asserts included for ROCm) and hands back outputs, which is what
every candidate of the task is then compared with.

Run on the GPU machine from the repository root, e.g.
  python experiments/perf/external_refcheck.py --rocm $KERNELEVO_EXTERNAL/GEAK-eval \
      --tritonbench $KERNELEVO_EXTERNAL/GEAK-eval --sample 40 \
      --kernelbench $KERNELEVO_EXTERNAL/KernelBench --json refcheck.json
Prints one table row per suite and the first line of every failure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import external  # noqa: E402
from fitness import device as device_lib
from fitness.processes import jail  # noqa: E402
from fitness.processes.device_lock import DeviceLock  # noqa: E402
from fitness.judge import harness  # noqa: E402
from fitness.judge.cascade import Cascade  # noqa: E402
from fitness.settings import Limits  # noqa: E402
from fitness.processes.pool import WorkerPool  # noqa: E402


def check_suite(suite: str, path: str, runner: Cascade, sample: int | None,
                jobs: int, every_task: bool = False) -> dict:
    """Returns the counts and failures of one suite on the runner's backend; `every_task`:
    run the tasks the static rule keeps off this backend too, and count where the rule's
    verdict (`runnable_on`) and the run agree."""
    tasks = external.load_suite(suite, path)
    runnable = [task for task in tasks if runner.device.backend in task.runnable_on]
    pool = tasks if every_task else runnable
    chosen = sorted(random.Random(0).sample(pool, sample), key=lambda t: t.name) \
        if sample and sample < len(pool) else pool
    failures, start = {}, time.monotonic()

    def reference(task):
        try:
            harness.reference(runner, task)
            return task.name, None
        except harness.HarnessError as error:
            return task.name, str(error)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for name, error in pool.map(reference, chosen):
            if error:
                failures[name] = error
    return {"suite": suite, "loaded": len(tasks), "runnable_here": len(runnable),
            "checked": len(chosen), "reference_passes": len(chosen) - len(failures),
            "not_runnable": {t.name: t.skip_reason for t in tasks if t not in runnable},
            "failures": failures, "wall_s": round(time.monotonic() - start, 1),
            "rule_agrees": sum((t in runnable) == (t.name not in failures) for t in chosen)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for suite in external.SUITES:
        parser.add_argument(f"--{suite.split('-')[0]}", metavar="PATH", help=f"checkout of {suite}")
    parser.add_argument("--sample", type=int, default=None, help="check at most this many runnable tasks per suite")
    parser.add_argument("--jobs", type=int, default=4, help="references run at once")
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--timeout", type=float, default=900.0, help="limit per reference run, seconds")
    parser.add_argument("--suite-seeds", action="store_true", help="keep the harness's own seeds (no salt)")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    parser.add_argument("--every-task", action="store_true", help="also run the tasks the static "
                        "rule says cannot run here, and count where rule and run agree")
    args = parser.parse_args()
    paths = {suite: getattr(args, suite.split("-")[0]) for suite in external.SUITES}
    if not any(paths.values()):
        parser.error("give at least one suite path (--tritonbench, --rocm, --kernelbench)")
    info = device_lib.detect(args.device)
    jail.verify(info.backend)
    results = []
    with tempfile.TemporaryDirectory(prefix="kernelevo-refcheck-") as root:
        workers = WorkerPool(info, args.jobs, "candidate", root)
        runner = Cascade(info, workers, None, DeviceLock(info.timing_meaningful),
                         Limits(reference_s=args.timeout), salt_harness_seeds=not args.suite_seeds)
        try:
            for suite, path in paths.items():
                if path:
                    results.append(check_suite(suite, path, runner, args.sample, args.jobs,
                                               args.every_task))
        finally:
            workers.close()
    print(f"device: {info.name} ({info.backend}), {time.strftime('%Y-%m-%d')}")
    print(f"{'suite':22} {'loaded':>6} {'runnable':>8} {'checked':>7} {'ref passes':>10} "
          f"{'rule agrees':>11} {'wall s':>7}")
    for row in results:
        print(f"{row['suite']:22} {row['loaded']:6d} {row['runnable_here']:8d} {row['checked']:7d} "
              f"{row['reference_passes']:10d} {row['rule_agrees']:11d} {row['wall_s']:7.1f}")
    for row in results:
        for name, error in sorted(row["failures"].items()):
            detail = next((line for line in reversed(error.strip().splitlines()) if line.strip()), "")
            print(f"  FAIL {row['suite']}/{name}: {error.splitlines()[0][:160]} | {detail[:200]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": info.name, "backend": info.backend,
                                               "suites": results}, indent=1))


if __name__ == "__main__":
    main()
