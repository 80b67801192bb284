"""The judge's clock against in-process event timing, per baseline case (issue 48's goals).

For each built-in task, the baseline module is scored as a candidate by the Evaluator: its
`latency_us` (a candidate worker timed by the judge's clock) and `ref_latency_us` (the
baseline worker, the same clock) are two independent judge readings of the same kernel; the
script also times the baseline in its own process with `fitness.measure.timing.bench`
(device events, L2 flushed, CUDA graphs: the clock verdicts used before). One JSON row per
task is appended to --out as it finishes; a rerun skips the tasks already there. Printed:
per case judge/events and the spread of the two judge readings, then the medians over cases
of 20 us or more.

    python experiments/perf/judge_clock_check.py --device cuda --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from benchmarks.registry import builtin  # noqa: E402
from evo.records import make_candidate  # noqa: E402
from fitness import Evaluator, Settings  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import clock  # noqa: E402
from fitness.measure import timing  # noqa: E402
from fitness.processes import modules  # noqa: E402
import clock_knobs  # noqa: E402  (beside this script)

FLOOR_US = 20.0


SWEEP_RUNS = 50


def swept_us(fn, device) -> dict[str, float]:
    """Returns the median of `SWEEP_RUNS` event-timed graph replays of `fn`, the last-level
    cache swept before each by writing a buffer twice its size (as `timing.bench` does) and
    by reading it. A write leaves dirty lines written back while the timed kernel reads: 3-6
    us of a 20-50-us kernel (RESULTS.md §6k), once a run in event timing, once a batch in the
    judge's (behind its fill's flush). Each replay waits behind a pad, so its start event
    fires with the work queued."""
    import torch

    sweep = torch.empty(timing.flush_bytes(device), dtype=torch.int8, device=device.torch_device)
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    medians = {}
    for name, swept in (("write", sweep.zero_), ("read", sweep.max)):
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(SWEEP_RUNS)]
        graph.replay()
        for start, end in pairs:
            swept()
            torch.cuda._sleep(50_000)
            start.record()
            graph.replay()
            end.record()
        torch.cuda.synchronize()
        medians[name] = statistics.median(start.elapsed_time(end) * 1e3 for start, end in pairs)
    return medians


def events_us(task, device) -> tuple[list[float], list[float], list[float], list[float]]:
    """Returns the baseline's median per case timed in this process with device events:
    on its own memory, and with its inputs in a judge-style lent buffer and its outputs
    allocated in a region of one (`fitness.sandbox.timed.Arena`), to tell the memory's
    part in a difference from the clock's; then `swept_us` on its own memory, the cache
    swept by writing and by reading, to tell the sweep's part."""
    import torch

    from fitness.processes import shared_memory
    from fitness.sandbox.timed import Arena

    path = os.path.abspath(f"baseline_{task.name}.py")
    with open(path, "w") as handle:
        handle.write(task.baseline_source)
    entry = getattr(modules.import_file(path, f"baseline_{task.name}"), task.entry_point)
    own, lent, written, read = [], [], [], []
    allocate = shared_memory.allocator(torch.cuda.current_device())
    for case in task.cases_for(device.backend):
        inputs = task.make_inputs(case.params, 0, device.torch_device)
        [stats] = timing.bench([lambda: entry(*inputs)], device)
        own.append(stats.median_us)
        swept = swept_us(lambda: entry(*inputs), device)
        written.append(swept["write"])
        read.append(swept["read"])
        outputs = entry(*inputs)
        out_bytes = sum(t.numel() * t.element_size()
                        for t in (outputs if isinstance(outputs, (tuple, list)) else [outputs]))
        buffer, layout = shared_memory.pack(inputs, [], allocate)
        region_buffer = allocate(2 * out_bytes + (1 << 20))
        views, region = shared_memory.unpack(buffer, layout["values"]), region_buffer.bytes()

        def in_lent_memory():
            with Arena(region):
                return entry(*views)

        [stats] = timing.bench([in_lent_memory], device)
        lent.append(stats.median_us)
        again = in_lent_memory()
        own_outputs = entry(*inputs)
        torch.cuda.synchronize()
        pairs = zip(*(o if isinstance(o, (tuple, list)) else [o] for o in (again, own_outputs)))
        if not all(torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-3) for a, b in pairs):
            print(f"{task.name} {case.name}: the baseline's outputs in lent memory differ",
                  flush=True)
        buffer.release()
        region_buffer.release()
    return own, lent, written, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tasks", default=None, help="comma-separated (default: every built-in)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--sandbox", default="bwrap", choices=("bwrap", "off"),
                        help="off: workers outside the sandbox, to tell its part in a difference")
    parser.add_argument("--max-runs", type=int, default=None,
                        help="runs a batch holds at most (`fitness.judge.clock.MAX_RUNS`, set in "
                             "this process, where the walks size their batches): longer batches "
                             "spread the judge's cost a batch over more runs")
    parser.add_argument("--wake", choices=("front", "spin"), default=None,
                        help="how the worker's stream waits for `go` (`fitness.judge.clock.WAKE`)")
    parser.add_argument("--turn", choices=("done", "go"), default=None,
                        help="when the checker queues its turn (`fitness.judge.clock.TURN`, set "
                             "in this process, which asks each batch of the checker)")
    clock_knobs.add(parser)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    clock_knobs.apply(args)
    if args.max_runs is not None:
        clock.MAX_RUNS = args.max_runs
    clock.TURN = args.turn or clock.TURN
    clock.WAKE = args.wake or clock.WAKE
    registry = builtin()
    names = args.tasks.split(",") if args.tasks else [t.name for t in registry.tasks()]
    done = set()
    if os.path.exists(args.out):
        with open(args.out) as handle:
            done = {json.loads(line)["task"] for line in handle if line.strip()}
    device = detect(args.device)
    with Evaluator(Settings(device=args.device, workers=args.workers, sandbox=args.sandbox)) as evaluator:
        for name in names:
            if name in done:
                continue
            task = registry.get(name)
            started = time.monotonic()
            evaluation = evaluator.evaluate(task, make_candidate(name, task.baseline_source))
            row = {"task": name, "max_runs": clock.MAX_RUNS, "turn": clock.TURN, "wake": clock.WAKE, "quiet": clock.QUIET, "warm": clock.WARM, "correct": evaluation.correct,
                   "failure": evaluation.failure_kind, "trace": evaluation.error_trace[-600:],
                   "cases": [c.name for c in task.cases_for(device.backend)],
                   "judge_us": list(evaluation.latency_us),
                   "judge_ref_us": list(evaluation.ref_latency_us),
                   **dict(zip(("events_us", "events_lent_us", "swept_write_us", "swept_read_us"),
                              events_us(task, device) if device.timing_meaningful else ([],) * 4)),
                   "seconds": round(time.monotonic() - started, 1)}
            with open(args.out, "a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(json.dumps({k: v for k, v in row.items() if k != "trace"}), flush=True)
    summarize(args.out)


def summarize(path: str) -> None:
    """Prints, over cases of FLOOR_US or more, the median |judge/events - 1| and the
    median and max spread of the two judge readings."""
    ratios, spreads, lent, by_sweep = [], [], [], {"write": [], "read": []}
    with open(path) as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for row in rows:
        cases = zip(row["judge_us"], row["judge_ref_us"], row["events_us"], row.get("events_lent_us", []),
                    row.get("swept_write_us") or [None] * len(row["events_us"]),
                    row.get("swept_read_us") or [None] * len(row["events_us"]))
        for cand, ref, events, in_lent, written, read in cases:
            if cand is None or ref is None or events < FLOOR_US:
                continue
            ratios.append(ref / events)
            lent.append(in_lent / events)
            spreads.append(abs(cand - ref) / min(cand, ref))
            for name, swept in (("write", written), ("read", read)):
                if swept:
                    by_sweep[name].append(ref / swept)
    if ratios:
        print(f"cases >= {FLOOR_US:g} us: {len(ratios)}; judge/events median "
              f"{statistics.median(ratios):.4f} (min {min(ratios):.4f}, max {max(ratios):.4f}); "
              f"judge repeat spread median {statistics.median(spreads):.4f}, max {max(spreads):.4f}; "
              f"events in lent memory / events median {statistics.median(lent):.4f}")
    for name, found in by_sweep.items():
        if found:
            print(f"judge / events with the cache swept by {name}ing, {SWEEP_RUNS} graph replays: median "
                  f"{statistics.median(found):.4f} (min {min(found):.4f}, max {max(found):.4f}) over "
                  f"{len(found)} cases")
    failed = [row["task"] for row in rows if not row["correct"]]
    print(f"baselines correct: {len(rows) - len(failed)} of {len(rows)}"
          + (f"; failed: {failed}" if failed else ""))


if __name__ == "__main__":
    main()
