"""The two TritonBench-G replies that stalled the evaluator on an H200 (issue 49), scored at once
in one Evaluator as tritonbench-revised candidates: prints each verdict, the wall time of its
walk and of its harness run, and whether the run ended within its limit plus the watchdog's
grace.

The replies (claude-3-5-sonnet-20240620, `comp` set, to int8_dequant_matmul and
chunk_retention_ops) and their two tasks travel in `data/issue49/` (sources in its NOTICE.md),
so a machine with no network and no GEAK-eval checkout runs this:
    python3 experiments/perf/issue49_replies.py --device cuda --timeout 20 [--write DIR]
`--write DIR` also writes each reply's code (as GEAK-eval extracts it) as DIR/<task>.py, for
`evo eval TASK DIR/TASK.py --suite tritonbench-revised --path experiments/perf/data/issue49/tritonbench`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE)]

import geak_correctness  # noqa: E402

DATA = HERE / "data" / "issue49"
SUITE_PATH = DATA / "tritonbench"


def replies() -> list[dict]:
    """Returns the stored replies, each with `source`: the code GEAK-eval takes from it."""
    rows = [json.loads(line) for line in (DATA / "replies.jsonl").read_text().splitlines() if line]
    return [{**row, "source": geak_correctness.extract_code(row["predict"])} for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--timeout", type=float, default=20.0, help="every stage's limit, s")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--write", help="folder to write each reply's code to, as <task>.py")
    parser.add_argument("--write-only", action="store_true", help="write them, score nothing")
    args = parser.parse_args()
    from benchmarks.external import tritonbench
    from evo.records import make_candidate
    from fitness import Evaluator, Limits, Settings
    from fitness.processes import watchdog

    tasks = {task.name: task for task in tritonbench.load(str(SUITE_PATH))}
    rows = replies()
    if args.write:
        folder = pathlib.Path(args.write)
        folder.mkdir(parents=True, exist_ok=True)
        for row in rows:
            (folder / f"{row['task']}.py").write_text(row["source"] or "")
    if args.write_only:
        return
    limits = Limits.uniform(args.timeout)
    bound_s = limits.harness_run_s + watchdog.GRACE_S
    start = time.monotonic()
    with Evaluator(Settings(device=args.device, workers=args.workers, timeouts=limits)) as evaluator:
        print(f"device {evaluator.device.name} ({evaluator.device.backend}), limits "
              f"{args.timeout:g} s each, harness run {limits.harness_run_s:g} s + grace "
              f"{watchdog.GRACE_S:g} s = {bound_s:g} s; started in "
              f"{time.monotonic() - start:.1f} s", flush=True)
        sent = time.monotonic()

        def score(row: dict):
            evaluation = evaluator.evaluate(tasks[row["task"]],
                                            make_candidate(row["task"], row["source"] or ""))
            return row, evaluation, time.monotonic() - sent

        with concurrent.futures.ThreadPoolExecutor(len(rows)) as pool:
            # as each ends: one that never does must not hide the other's verdict
            for done in concurrent.futures.as_completed([pool.submit(score, row) for row in rows]):
                row, evaluation, walk_s = done.result()
                last = (evaluation.error_trace.strip().splitlines() or [""])[-1][:200]
                within = "within" if evaluation.check_s <= bound_s else "PAST"
                print(f"{row['task']} ({row['model']} line {row['line']}): "
                      f"{evaluation.failure_kind or 'correct'} at {evaluation.stage_reached}; "
                      f"walk {walk_s:.1f} s, harness run {evaluation.check_s:.1f} s ({within} "
                      f"{bound_s:g} s); {last}", flush=True)
        stats = evaluator.stats()
        print(f"device_ok {stats['device_ok']} {stats['device_error']} respawns "
              f"{stats['respawns']} watchdog ends {watchdog.WATCHDOG.ended}", flush=True)


if __name__ == "__main__":
    main()
