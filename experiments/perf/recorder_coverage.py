"""Which external tasks the judge's recorders take (`benchmarks/external/recorded.py`,
`rocm_launches.py`, `kernelbench_models.py`), and why they refuse the others: each task's
`Task.timing_calls.record` in a fresh subprocess, as a checker runs it, on the given device,
on the first `--count` performance inputs or parametrizations (0: all, 8 at most for ROCm).
One JSON line per task goes to --out as it finishes (--resume skips the tasks a file already
holds); the counts by outcome are printed at the end.

On the CPU (TRITON_INTERPRET=1) the reference kernel runs under the interpreter twice per
input, so a task whose first input is large runs out of `--timeout`: those are "timeout",
neither taken nor refused. On a GPU run it with `--device cuda --count 0`.

  TRITON_INTERPRET=1 PYTHONPATH=. python experiments/perf/recorder_coverage.py \\
      --path $KERNELEVO_EXTERNAL/GEAK-eval --out coverage.jsonl [--suite rocm] [--device cpu] [--count 1]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_CHILD = """
import json, sys
from benchmarks import registry
task = registry.load(sys.argv[5], sys.argv[1]).get(sys.argv[2])
count = int(sys.argv[4]) or None
reply = task.timing_calls.record(sys.argv[3], count)
calls = reply.get("calls") or {}
print(json.dumps({"unrecordable": reply.get("unrecordable"), "entry": calls.get("entry", task.timing_calls.entry),
                  "arity": calls.get("arity"), "written": calls.get("written"), "inputs": calls.get("inputs")}))
"""


def survey(suite: str, path: str, name: str, device: str, count: int, timeout: float) -> dict:
    """Returns one task's row: taken (entry, arity, written), refused (why), failed or timeout."""
    started = time.monotonic()
    row = {"task": name}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, path, name, device, str(count), suite], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "outcome": "timeout", "seconds": timeout}
    row["seconds"] = round(time.monotonic() - started, 1)
    if done.returncode != 0:
        return {**row, "outcome": "failed", "why": done.stderr.strip().splitlines()[-1:] or ["?"]}
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    if reply["unrecordable"]:
        return {**row, "outcome": "refused", "why": reply["unrecordable"]}
    return {**row, "outcome": "taken", **{k: reply[k] for k in ("entry", "arity", "written", "inputs")}}


def _kind(row: dict) -> str:
    why = row.get("why")
    if row["outcome"] == "refused":
        return "refused: " + why.split(":")[0].split(" on input")[0][:70]
    if row["outcome"] == "failed":
        return "failed: " + str(why[0]).split(":")[0][:60]
    return row["outcome"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", required=True, help="the suite's checkout (GEAK-eval, KernelBench)")
    parser.add_argument("--suite", default="tritonbench-revised", choices=("tritonbench-revised", "rocm", "kernelbench"))
    parser.add_argument("--out", required=True, help="JSON lines, one per task")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--count", type=int, default=1, help="inputs recorded per task (0: all)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tasks", nargs="*", help="only these tasks")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from benchmarks import registry

    tasks = registry.load(args.suite, args.path)
    out = pathlib.Path(args.out)
    done = {json.loads(line)["task"]: json.loads(line) for line in out.read_text().splitlines()} if (
        args.resume and out.exists()) else {}
    names = [name for name in (args.tasks or [t.name for t in tasks.tasks()]) if name not in done
             and tasks.get(name).timing_calls is not None]
    untimed = [t.name for t in tasks.tasks() if t.timing_calls is None]
    print(f"{len(names)} tasks to record, {len(done)} done earlier, {len(untimed)} without timing code "
          f"(their untimed_reason)", flush=True)
    rows = list(done.values())
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool, out.open("a") as sink:
        futures = [pool.submit(survey, args.suite, args.path, name, args.device, args.count, args.timeout)
                   for name in names]
        for at, future in enumerate(concurrent.futures.as_completed(futures), 1):
            row = future.result()
            rows.append(row)
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(f"[{at}/{len(names)}] {row['task']}: {row['outcome']} {row.get('why') or row.get('entry') or ''}"[:300],
                  flush=True)
    counts = collections.Counter(_kind(row) for row in rows)
    print(f"\n{len(rows)} tasks recorded on {args.device} (first {args.count or 'all'} inputs); "
          f"{len(untimed)} more have no timing code")
    for kind, number in counts.most_common():
        print(f"  {number:4d} {kind}")


if __name__ == "__main__":
    main()
