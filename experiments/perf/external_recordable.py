"""Can the external suites' timing code be recorded? A survey, on the CPU, of the design in
docs/design.md, "External suites on the judge's clock": the suite's timing code runs with the
kernel module's functions replaced by recorders, and each recorded call would become a case.

Per task, in a fresh subprocess (memory-limited, TRITON_INTERPRET=1, the CPU build of torch):
- TritonBench-revised: the prepared performance file (`geak_perf.prepare`, as the worker runs
  it) is imported with the kernel module's name bound to a proxy module whose every top-level
  function and class of the reference source (parsed, never run) is a recorder: it stores
  the call's name and a description of its arguments and returns None. `get_input_tensors`
  runs (seeded as the harness seeds), then `call_op(input)` per input with `to_cuda` the
  identity. Then `get_input_tensors` runs again under the same seed and under another, and
  the inputs' fingerprints say whether they are deterministic and whether they change.
- ROCm: the module (kernel + tests, as the harness writes it) runs under pytest, `-k
  test_performance`, with the kernel part's functions and classes replaced by recorders in
  the test module and the harness's geak_eval stand-in (and `triton.testing.do_bench`)
  calling the op once; a parametrization is one performance input. Three runs: harness seed,
  the same again, a salted seed (the harness's `_salt_seeds`).
Inside the child, tensors asked for on "cuda" are made on the host and `torch.empty*` is made
`torch.zeros*` (so that fingerprints compare values, not stale memory); the row counts the
calls that named cuda. One JSON line per task goes to --out as it finishes (--resume skips
the tasks a file already holds); the summary table is printed at the end.

  PYTHONPATH=. python experiments/perf/external_recordable.py --out recordable.jsonl \\
      [--path $KERNELEVO_EXTERNAL/GEAK-eval] [--suites tritonbench-revised rocm] [--resume]
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.external import load_suite  # noqa: E402
from evo.records import parse_source  # noqa: E402

SUITES = ("tritonbench-revised", "rocm")
_DEFAULT_EXTERNAL = ROOT.parent / "shared" / "external"


# --- the trusted side: one child per task, rows, summary ----------------------------------

def task_spec(task) -> dict:
    """Returns what the child needs of a Task (no project object crosses)."""
    body = parse_source(task.baseline_source).body
    kernel_names = {node.name: "class" if isinstance(node, ast.ClassDef) else "function" for node in body
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in body:  # `entry = SomeFunction.apply`: an alias of a function or class defined above
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in kernel_names:
                kernel_names.update({target.id: "alias" for target in node.targets if isinstance(target, ast.Name)})
    return {"suite": task.suite, "task": task.name, "stem": pathlib.Path(task.source_path).stem,
            "entry_point": task.entry_point, "kernel": task.baseline_source, "tests": task.harness,
            "perf_harness": task.perf_harness, "untimed_reason": task.untimed_reason,
            "names": kernel_names}


def survey_task(task, timeout_s: float, memory_bytes: int) -> dict:
    """Returns the task's row: the child's last report, or why there is none."""
    spec = task_spec(task)
    base = {"suite": task.suite, "task": task.name, "entry_point": task.entry_point}
    if task.untimed_reason:  # no performance file, no test_performance
        return {**base, "status": "no timing code", "reason": task.untimed_reason}
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(memory_bytes)], input=json.dumps(spec),
                              capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)
        stdout, returncode, stderr = done.stdout, done.returncode, done.stderr
    except subprocess.TimeoutExpired as expired:
        stdout = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) \
            else (expired.stdout or "")
        returncode, stderr = None, f"timeout after {timeout_s:.0f} s"
    reports = [line[len("ROW "):] for line in stdout.splitlines() if line.startswith("ROW ")]
    row = {**base, **json.loads(reports[-1])} if reports else {**base, "status": "failed"}
    row["child_s"] = round(time.monotonic() - started, 2)
    if returncode is None:
        row["timed_out_in"] = row.get("phase", "start")
        row.setdefault("error", stderr)
        row["status"] = row["status"] if row.get("phase") == "seed check" else "failed"
    elif row.get("phase") != "done":
        row.setdefault("error", f"child ended rc={returncode} in phase {row.get('phase')}: "
                                f"{stderr.strip().splitlines()[-1][:300] if stderr.strip() else ''}")
        row["status"] = "failed"
    return row


def run_survey(path: str, suites, out: pathlib.Path, resume: bool, timeout_s: float,
               memory_bytes: int, only=None) -> list[dict]:
    """Surveys every task of `suites` (those named in `only`, if given), appending rows to
    `out`; returns all rows in the file."""
    done = {(row["suite"], row["task"]) for row in _rows(out)} if resume else set()
    if not resume:
        out.write_text("")
    for suite in suites:
        tasks = [task for task in load_suite(suite, path) if not only or task.name in only]
        for number, task in enumerate(tasks, 1):
            if (suite, task.name) in done:
                continue
            row = survey_task(task, timeout_s, memory_bytes)
            with out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(f"[{suite} {number}/{len(tasks)}] {task.name}: {row['status']}"
                  f"{' (' + row['error'][:120] + ')' if row.get('error') else ''}", flush=True)
    return _rows(out)


def _rows(out: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []


def _quantiles(values) -> str:
    values = sorted(values)
    if not values:
        return "n/a"
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"median {statistics.median(values):.3g}, p90 {p90:.3g}, max {values[-1]:.3g} (n={len(values)})"


def failure_kind(row: dict) -> str:
    """Groups a failed or partly recorded row by why."""
    if row.get("timed_out_in"):
        return f"timeout in {row['timed_out_in']}"
    error = row.get("error") or ""
    return row.get("failure") or error.split(":")[0][:80] or "unknown"


def summary(rows: list[dict]) -> str:
    """Returns the survey's table, per suite."""
    lines = []
    for suite in SUITES:
        mine = [row for row in rows if row["suite"] == suite]
        if not mine:
            continue
        statuses = collections.Counter(row["status"] for row in mine)
        lines.append(f"## {suite}: {len(mine)} tasks")
        for status, count in statuses.most_common():
            lines.append(f"  {status:42s} {count}")
        failed = [row for row in mine if row["status"] not in ("one entry call per input", "several calls",
                                                               "no timing code")]
        for kind, group in collections.Counter(failure_kind(row) for row in failed).most_common():
            names = [row["task"] for row in failed if failure_kind(row) == kind][:3]
            lines.append(f"    why: {kind[:90]:90s} {group}  e.g. {', '.join(names)}")
        recorded = [row for row in mine if row.get("inputs")]
        per_input = [size for row in recorded for size in row.get("arg_bytes", [])]
        lines.append(f"  performance inputs per task: {_quantiles([row['inputs'] for row in recorded])}")
        lines.append(f"  tensor-argument bytes per input: {_quantiles(per_input)}")
        lines.append(f"  tensor-argument bytes per task (sum): "
                     f"{_quantiles([sum(row.get('arg_bytes', [])) for row in recorded])}")
        timed = [row for row in recorded if "generate_s" in row]
        lines.append(f"  host generation s per task: {_quantiles([row['generate_s'] for row in timed])}")
        lines.append(f"  host generation s per input (task's / its inputs): "
                     f"{_quantiles([row['generate_s'] / row['inputs'] for row in timed])}")
        lines.append(f"  calls per input: {_quantiles([n for row in recorded for n in row.get('calls_per_input', [])])}; "
                     f"tasks with an input whose calls get no tensor: "
                     f"{sum(0 in row.get('arg_bytes', []) for row in recorded)}")
        lines.append(f"  tasks whose recorded calls name a class: {sum(bool(row.get('class_calls')) for row in recorded)}; "
                     f"a jit kernel launched directly: {sum(bool(row.get('launches')) for row in recorded)}; "
                     f"names 'cuda' explicitly: {sum(bool(row.get('cuda_named')) for row in recorded)}; "
                     f"get_input_tensors calls the module: {sum(bool(row.get('generation_calls')) for row in mine)}; "
                     f"entry differs from the task's entry_point: "
                     f"{sum(row.get('entry_mismatch', False) for row in recorded)}")
        checked = [row for row in recorded if row.get("deterministic") is not None]
        lines.append(f"  seed check run on {len(checked)} of {len(recorded)} "
                     f"(skipped where one generation took over 5 s or the child ran out of time)")
        lines.append(f"  deterministic under the same seed: {sum(row['deterministic'] for row in checked)}/{len(checked)}; "
                     f"change with another seed: {sum(bool(row.get('changes_with_seed')) for row in checked)}/{len(checked)}"
                     f" (all inputs: {sum(row.get('changes_with_seed') == 'all' for row in checked)})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=None, help="GEAK-eval checkout (default $KERNELEVO_EXTERNAL/GEAK-eval)")
    parser.add_argument("--suites", nargs="+", default=list(SUITES), choices=SUITES)
    parser.add_argument("--tasks", nargs="*", default=None, help="only these task names")
    parser.add_argument("--out", type=pathlib.Path, help="JSON lines, one per task")
    parser.add_argument("--resume", action="store_true", help="skip the tasks --out already holds")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per task's child")
    parser.add_argument("--memory-gb", type=float, default=6.0, help="address-space limit of a child")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import external_recordable_child  # noqa: E402  (beside this script)

        external_recordable_child.main(int(args.child))
        return
    if args.out is None:
        parser.error("--out is required")
    path = args.path or str(pathlib.Path(os.environ.get("KERNELEVO_EXTERNAL") or _DEFAULT_EXTERNAL) / "GEAK-eval")
    rows = run_survey(path, args.suites, args.out, args.resume, args.timeout,
                      int(args.memory_gb * 2**30), set(args.tasks) if args.tasks else None)
    print(summary(rows))


if __name__ == "__main__":
    main()
