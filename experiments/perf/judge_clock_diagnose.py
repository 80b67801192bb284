"""Where the judge's clock and in-process event timing part (issue 48, RESULTS.md §20).

Both sides of a timed batch run here, in one process and one CUDA context: the checker's
`TimedBatch` and the worker's `TimedCase` on the baseline of each task. Per case it prints (and appends to --out as one JSON row):

- `events_us`: `fitness.measure.timing.bench`, in-process events with the cache flushed
  before every run (the clock verdicts used before);
- `judge_us`: the batch as the judge makes it (fresh inputs filled, regions poisoned, the
  worker's captured runs, the snapshot) timed per run by events of the worker's stream
  ordered behind the fill: no second process, no go/done handoff; and its verdict;
- `judge64_us`: the same with up to 64 runs a batch (`BATCH_BYTES` raised);
- `worker_us`: the same with the worker's own instrumented call (`fitness.sandbox.worker`:
  its launch counter, op recorder and watches installed in this process), as in a worker;
- `flushed_us`: the batch with the cache flushed before every run inside the graph, less a
  graph of the flushes alone.

Beside `judge_clock_check.py` on the same tasks (two processes, go/done), judge_us apart
from the cross-process reading is the handoff's part; judge_us apart from events the batch's
shape (back-to-back runs on fresh memory against runs on a flushed cache).

    python experiments/perf/judge_clock_diagnose.py --tasks vector_add,embedding --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

from benchmarks.registry import builtin  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import clock, timed_batch  # noqa: E402
from fitness.measure import timing  # noqa: E402
from fitness.processes import host_words, modules  # noqa: E402
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


_WORKER: list = []


def _instrumented(device):
    """The worker's object (`fitness.sandbox.worker.Worker`), made once: it installs its
    instruments in this process."""
    import dataclasses

    from fitness.sandbox import worker

    if not _WORKER:
        _WORKER.append(worker.Worker({"device": dataclasses.asdict(device)}, None))
    return _WORKER[0]


def worker_caller(device, entry, path: str):
    """Returns the worker's own timed call (`Worker._timed_call`), its instruments installed
    here: what a sandboxed worker runs, minus the process."""
    from fitness.sandbox import worker

    instrumented = _instrumented(device)
    instrumented.entry, instrumented.module_path = entry, path
    return instrumented._timed_call(worker._Observed())


def events_and_runs(task, params: dict, device, entry) -> tuple[float, int]:
    """Returns the baseline's median on the case by in-process event timing (the cache
    flushed before every run) and the runs the judge would put in a batch of it."""
    inputs = task.make_inputs(params, 0, device.torch_device)
    [events] = timing.bench([lambda: entry(*inputs)], device)
    return events.median_us, clock.batch_runs(events.median_us, True)


def judge_batches(task, params, runs, device, entry, before=None,
                  call=None) -> tuple[list, list, int]:
    """Returns (per-run microseconds of each batch, verdict kinds and the method, the runs a
    batch held): the checker's fill, then the worker's runs between two events of the
    worker's stream ordered behind it, then the checker's snapshot and judgement."""
    batch = timed_batch.TimedBatch(task, params, runs, device, True, None)
    case = TimedCase(batch.buffer, host_words.HostWords.open(batch.words.export()), batch.share(),
                     call or _caller(entry, before))
    method = case.stage()["method"]
    per_run, kinds = [], []
    for _ in range(BATCHES):
        batch.fill()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        case.stream.wait_stream(batch.stream)
        with torch.cuda.stream(case.stream):
            start.record()
            if case.graph is not None:
                case.graph.replay()
                specs = case.specs
            else:
                specs = case._runs()
            end.record()
        batch.stream.wait_stream(case.stream)
        with torch.cuda.stream(batch.stream):
            for _ in batch.take_snapshot():  # a copy at each step
                pass
        torch.cuda.synchronize()
        verdict = batch.judge(specs, None)
        per_run.append(start.elapsed_time(end) * 1e3 / batch.runs)
        kinds.append(verdict["kind"] or "ok")
        if verdict["kind"]:
            kinds.append(verdict["detail"][:300])
    held = batch.runs
    case.words.release()
    batch.close()
    return per_run, kinds + [method], held


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
            events_us, runs = events_and_runs(task, case_spec.params, device, entry)
            row = {"task": name, "case": case_spec.name, "events_us": events_us}
            judged, kinds, held = judge_batches(task, case_spec.params, runs, device, entry)
            row.update(judge_us=statistics.median(judged), judge_all=judged, kinds=kinds,
                       runs=held)
            print(f"  {name} {case_spec.name}: events {events_us:.1f} us, in-process "
                  f"batch of {held} {row['judge_us']:.1f} us {kinds}", flush=True)
            saved = timed_batch.BATCH_BYTES
            timed_batch.BATCH_BYTES = 12 << 30
            try:
                judged, kinds, held = judge_batches(task, case_spec.params, runs, device, entry)
                row.update(judge64_us=statistics.median(judged), runs64=held, kinds64=kinds)
            finally:
                timed_batch.BATCH_BYTES = saved
            instrumented = worker_caller(device, entry, os.path.abspath(f"diagnose_{name}.py"))
            judged, kinds, held = judge_batches(task, case_spec.params, runs, device, entry,
                                                call=instrumented)
            row.update(worker_us=statistics.median(judged), kinds_worker=kinds)
            print(f"  worker's call: {row['worker_us']:.1f} us {kinds}", flush=True)
            judged, kinds, held = judge_batches(task, case_spec.params, runs, device, entry,
                                                before=flush.zero_)
            flush_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(flush_graph):
                for _ in range(held):
                    flush.zero_()
            flush_only = []
            for _ in range(BATCHES):
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
                flush_graph.replay()
                end.record()
                end.synchronize()
                flush_only.append(start.elapsed_time(end) * 1e3 / held)
            row.update(flushed_us=statistics.median(judged) - statistics.median(flush_only),
                       flush_us=statistics.median(flush_only), kinds_flushed=kinds,
                       seconds=round(time.monotonic() - started, 1))
            for key in ("judge_us", "judge64_us", "worker_us", "flushed_us"):
                row[key.replace("_us", "/events")] = round(row[key] / events_us, 3)
            print(json.dumps({k: v for k, v in row.items() if k != "judge_all"}), flush=True)
            with open(args.out, "a") as handle:
                handle.write(json.dumps(row) + "\n")
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
