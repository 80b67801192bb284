"""Where the judge's clock and in-process event timing part (issue 48, RESULTS.md §20).

Both sides of a timed batch run here, in one process and one CUDA context: the checker's
`TimedBatch` and the worker's `TimedCase` on the baseline of each task, armed on one stream
and released from another. Per case it prints (and appends to --out as one JSON row):

- `events_us`: `fitness.measure.timing.bench`, in-process events with the cache flushed
  before every run (the clock verdicts used before);
- `judge_us`: the judge's go..done per run over the batch, same process (no second
  context to time-slice with), and whether the batch was judged correct;
- `judge64_us`: the same with up to 64 runs a batch (`BATCH_BYTES` raised);
- `replay_us`: the worker's captured graph of the batch replayed between two events of its
  own stream on inputs already in place (no go/done, no fill, no poison);
- `flushed_us`: the batch with the cache flushed before every run inside the graph, less a
  graph of the flushes alone.

So judge/events apart from replay/events is the clock's own part, and replay apart from
flushed is back-to-back runs against runs on a flushed cache.

    python experiments/perf/judge_clock_diagnose.py --tasks vector_add,embedding --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

from benchmarks.registry import builtin  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import clock, timed_batch  # noqa: E402
from fitness.measure import timing  # noqa: E402
from fitness.processes import modules  # noqa: E402
from fitness.sandbox.timed import TimedCase  # noqa: E402

BATCHES = 5


def _as_list(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _entry(task):
    path = os.path.abspath(f"diagnose_{task.name}.py")
    with open(path, "w") as handle:
        handle.write(task.baseline_source)
    return getattr(modules.import_file(path, f"diagnose_{task.name}"), task.entry_point)


def _caller(entry, before=None):
    """Returns TimedCase's call(inputs, arena, capturing); `before()` runs ahead of each run."""
    def call(inputs, arena, capturing):
        if before is not None:
            before()
        if arena is None:
            return _as_list(entry(*inputs))
        with arena:
            return _as_list(entry(*inputs))
    return call


def judge_batches(task, params, runs, device, entry, before=None) -> tuple[list, list, TimedCase,
                                                                            timed_batch.TimedBatch]:
    """Returns (per-run microseconds of each batch, verdict kinds, the staged case, the batch)."""
    batch = timed_batch.TimedBatch(task, params, runs, device, True, None)
    case = TimedCase(batch.buffer, batch.share(), _caller(entry, before))
    method = case.stage()["method"]
    per_run, kinds = [], []
    for _ in range(BATCHES):
        go = random.randrange(1, 2**31)
        specs = case.arm(go)
        elapsed_us = batch.release(go, 20.0)
        verdict = batch.judge(specs, None)
        per_run.append(elapsed_us / batch.runs)
        kinds.append(verdict["kind"] or "ok")
        if verdict["kind"]:
            kinds.append(verdict["detail"][:300])
    return per_run, kinds + [method], case, batch


def replay_us(case: TimedCase, runs: int) -> float | None:
    """The captured graph between two events of its own stream, inputs already in place."""
    if case.graph is None:
        return None
    samples = []
    for _ in range(BATCHES):
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        with torch.cuda.stream(case.stream):
            start.record()
            case.graph.replay()
            end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / runs)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="vector_add,embedding,flip2d,row_sum,cross_entropy")
    parser.add_argument("--cases", type=int, default=2, help="first cases of each task")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    device = detect(args.device)
    registry = builtin()
    flush = torch.empty(max(2 * device.llc_bytes, 64 << 20), dtype=torch.int8, device="cuda")
    for name in args.tasks.split(","):
        task = registry.get(name)
        entry = _entry(task)
        for case_spec in task.cases_for(device.backend)[:args.cases]:
            started = time.monotonic()
            inputs = task.make_inputs(case_spec.params, 0, device.torch_device)
            [events] = timing.bench([lambda: entry(*inputs)], device)
            runs = clock.batch_runs(events.median_us, True)
            row = {"task": name, "case": case_spec.name, "events_us": events.median_us,
                   "runs_asked": runs}
            judged, kinds, case, batch = judge_batches(task, case_spec.params, runs, device, entry)
            row.update(judge_us=statistics.median(judged), judge_all=judged, kinds=kinds,
                       runs=batch.runs, replay_us=replay_us(case, batch.runs))
            batch.close()
            saved = timed_batch.BATCH_BYTES
            timed_batch.BATCH_BYTES = 12 << 30
            try:
                judged, kinds, case, batch = judge_batches(task, case_spec.params, runs, device,
                                                           entry)
                row.update(judge64_us=statistics.median(judged), runs64=batch.runs,
                           kinds64=kinds)
                batch.close()
            finally:
                timed_batch.BATCH_BYTES = saved
            judged, kinds, case, batch = judge_batches(task, case_spec.params, runs, device,
                                                       entry, before=flush.zero_)
            flushed = replay_us(case, batch.runs)
            batch.close()
            flush_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(flush_graph):
                for _ in range(batch.runs):
                    flush.zero_()
            flush_only = []
            for _ in range(BATCHES):
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                flush_graph.replay()
                end.record()
                end.synchronize()
                flush_only.append(start.elapsed_time(end) * 1e3 / batch.runs)
            row.update(flushed_us=(flushed - statistics.median(flush_only)) if flushed else None,
                       flush_us=statistics.median(flush_only), kinds_flushed=kinds,
                       seconds=round(time.monotonic() - started, 1))
            for key in ("judge_us", "judge64_us", "replay_us", "flushed_us"):
                if row.get(key):
                    row[key.replace("_us", "/events")] = round(row[key] / events.median_us, 3)
            print(json.dumps({k: v for k, v in row.items() if k != "judge_all"}), flush=True)
            with open(args.out, "a") as handle:
                handle.write(json.dumps(row) + "\n")
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
