"""Every design combination of a built-in baseline on the task's GPU cases, against its reference.

tests/test_builtin_knobs.py checks the designs on the interpreter's small cases; a design can
still go wrong only at GPU sizes or only where the device has TMA. This runs each combination
of the task's DESIGN knobs (the table's tuning kept, every bucket set alike) in its own child
process with a time limit (a compiler crash or a hang costs one combination), on every GPU case,
and prints a row per combination: ok, or what went wrong. Run on a GPU box from the repo root:

    python3 experiments/perf/design_check.py batched_matmul [--timeout 120] [--workers 12] [--device cpu]
"""

import argparse
import concurrent.futures
import itertools
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import task_checks  # noqa: E402
from benchmarks import registry  # noqa: E402
from benchmarks.builtin import common  # noqa: E402
from operators import tables  # noqa: E402


def check(task_name: str, setting: dict, device: str) -> list[str]:
    """Returns one line per case where the baseline with `setting` in every bucket disagrees
    (the GPU cases on cuda, the interpreter's on cpu)."""
    task = registry.builtin().get(task_name)
    module = task_checks.import_file(common.KERNELS_DIR / f"{task_name}.py", f"design_{task_name}")
    module.CONFIGS = {bucket: tuple({**dict(entry), **setting}.items()) for bucket, entry in module.CONFIGS.items()}
    fn = getattr(module, task.entry_point)
    cases = task.cases if device == "cuda" else task.interpreter_cases
    return [f"{case.name}: {why}" for case in cases
            if (why := task_checks.mismatch(task, fn, task.make_inputs(case.params, 1, device)))]


def run_child(task_name: str, setting: dict, device: str, timeout: float) -> str:
    """Runs `check` in a child process; returns "ok" or why not."""
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import design_check; "
            f"print(json.dumps(design_check.check({task_name!r}, {setting!r}, {device!r})))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"no result in {timeout:g} s"
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}"
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    return "ok" if not failures else "; ".join(failures)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: the interpreter's cases (set TRITON_INTERPRET=1), a smoke run")
    args = parser.parse_args()
    space = tables.space(registry.builtin().get(args.task).baseline_source)
    design = space["design"]
    combos = [dict(zip(design, values)) for values in itertools.product(*(space["knobs"][d] for d in design))]
    with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        verdicts = list(pool.map(lambda s: run_child(args.task, s, args.device, args.timeout), combos))
    for setting, verdict in zip(combos, verdicts):
        print(" ".join(f"{k}={v}" for k, v in setting.items()), "|", verdict, flush=True)
    bad = sum(verdict != "ok" for verdict in verdicts)
    print(f"{args.task}: {len(combos) - bad} of {len(combos)} design combinations ok on every {args.device} case")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
