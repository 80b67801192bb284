"""The judge's clock across two processes without the Evaluator (issue 48, RESULTS.md §26-27).

The checker's `TimedBatch` stays in this process, exactly as the checker drives it
(`release`: fill, go, done, snapshot; then `judge`); the worker's `TimedCase` runs in a plain
child process started here: no pool, no fork server, no sandbox, no engine in between.
`--instrumented` gives the child the worker's own timed call (its launch counter, op recorder
and watches). Per case, one JSON row to --out and stdout: events (in-process, cache flushed),
the judge's reading, the child's own events around its runs (after `go`, before `done`: the
runs alone, without the handoff), each batch's `release` wall time, where the child's
staging went (mapping, host words, warm-up and capture, a second capture), and the batches'
verdicts (on a wrong run: whether the lent inputs were as made, the output, and the
reference on what the lent buffer held when the clock stopped; cross_entropy's per-row
losses, output spec and region; then the child's own call on that run's lent inputs again,
outside a batch, with its allocations in its normal memory, in the run's lent region, and in
a region of a buffer the child made itself).

It told where the device-word design lost 290 us a batch (RESULTS.md#host-clock): against
the child's events, a wait for `done` pending in the checker's context, and the child's
stream woken from a front-end wait on `go`; and that the checker read cross_entropy's mean
from the head of its region (RESULTS.md §27).

    python experiments/perf/judge_clock_bisect.py --tasks vector_add,cross_entropy --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

from benchmarks.registry import builtin  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import checking, timed_batch  # noqa: E402
from fitness.measure import timing  # noqa: E402
from fitness.processes import host_words, shared_memory  # noqa: E402
from fitness.sandbox.timed import Arena, TimedCase  # noqa: E402
from judge_clock_diagnose import (BATCHES, _caller, _entry, events_and_runs,  # noqa: E402
                                  worker_caller)


class EventedCase(TimedCase):
    """`TimedCase` with the child's own events around its runs (after `_await_go`, before
    `done`): `arm`'s graph or eager runs are bracketed by a subclass of the stream's work."""

    events = None

    def arm(self, go: int) -> list:
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        graph, self.graph = self.graph, _Bracketed(self.graph, self.events, self.stream)
        try:
            return super().arm(go)
        finally:
            self.graph = graph

    def last_us(self) -> float:
        self.events[1].synchronize()
        return self.events[0].elapsed_time(self.events[1]) * 1e3


class HostWokenCase(EventedCase):
    """`EventedCase` woken by its host instead of its stream's front end: `arm` replies at
    once, and a thread spins on the host word `go`, then replays the graph and has the stream
    write `done`. Does a host thread and a launch hand over faster than the front end's wait
    on `go` (about 160 us a batch, RESULTS.md#host-clock)?"""

    def arm(self, go: int) -> list:
        from fitness.processes import stream_sync

        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        bracketed = _Bracketed(self.graph, self.events, self.stream)

        def woken() -> None:
            while self.words.load("go") != go:
                pass
            bracketed.replay()
            stream_sync.write_value(self.stream.cuda_stream, self.words.address("done"), go)

        threading.Thread(target=woken, daemon=True).start()
        return self.specs


class _Bracketed:
    """Stands in for the captured graph in `TimedCase.arm`: its replay is recorded between
    two events on the case's stream."""

    def __init__(self, graph, events, stream):
        self.graph, self.events, self.stream = graph, events, stream

    def replay(self) -> None:
        self.events[0].record(self.stream)
        self.graph.replay()
        self.events[1].record(self.stream)


def serve(channel_fd: int, control_fd: int, instrumented: bool, wake: str) -> None:
    """The child: stages a case on the buffer and words it is sent, arms a batch on each
    request."""
    channel = socket.socket(fileno=channel_fd)
    control = socket.socket(fileno=control_fd).makefile("rw")
    device = detect("cuda")
    case = None
    for line in control:
        msg = json.loads(line)
        if msg["op"] == "stage":
            if case is not None:
                torch.cuda.synchronize()
                case.buffer.release()
                case.words.release()
            task = builtin().get(msg["task"])
            entry = _entry(task)
            began = time.perf_counter()
            fd = shared_memory.receive_fd(channel, msg["tag"], 30)
            buffer = shared_memory.SharedBuffer.open(fd, msg["size"], torch.cuda.current_device())
            os.close(fd)
            mapped = time.perf_counter()
            words = host_words.HostWords.open(
                shared_memory.receive_fd(channel, msg["tag"] + host_words.TAG, 30))
            registered = time.perf_counter()
            call = (worker_caller(device, entry, os.path.abspath(f"diagnose_{task.name}.py"))
                    if instrumented else _caller(entry))
            case = (HostWokenCase if wake == "host" else EventedCase)(buffer, words, msg["where"], call)
            reply = case.stage()
            staged = time.perf_counter()
            case.stage()  # again, warm: what the capture of the runs costs by itself
            if reply["method"] != "graph":
                raise SystemExit(f"{task.name}: the bisect brackets graphs only")
            # where a worker's `timed_stage` goes (about 0.3-0.6 s a case in the Evaluator)
            reply["stage_ms"] = {"map": 1e3 * (mapped - began),
                                 "words": 1e3 * (registered - mapped),
                                 "stage": 1e3 * (staged - registered),
                                 "stage_again": 1e3 * (time.perf_counter() - staged)}
        elif msg["op"] == "last":
            reply = {"us": case.last_us()}
        elif msg["op"] == "recheck":  # the child's own outputs on a run's lent inputs, again
            torch.cuda.synchronize()
            own = shared_memory.SharedBuffer.create(case.regions[0].numel(), buffer.device)
            reply = {}
            for run in msg["runs"]:
                outputs = {"plain": _caller(entry)(case.sets[run], None, False),
                           "lent_region": _caller(entry)(case.sets[run], Arena(case.regions[run]), False),
                           "own_region": _caller(entry)(case.sets[run], Arena(own.bytes()), False),
                           "reference": checking.as_list(task.reference(*case.sets[run]))}
                torch.cuda.synchronize()
                reply[run] = {key: [float(t.float().flatten()[0]) for t in value]
                              for key, value in outputs.items()}
            own.release()
        else:  # arm
            reply = {"specs": case.arm(msg["go"])}
        control.write(json.dumps(reply) + "\n")
        control.flush()


class Child:
    """The worker's side in a child process, over a socket pair (requests, one JSON line
    each) and a datagram pair (the descriptors)."""

    def __init__(self, instrumented: bool, wake: str):
        self.channel, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.control, far_control = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(far.fileno()), str(far_control.fileno()),
             "--wake", wake] + (["--instrumented"] if instrumented else []),
            pass_fds=(far.fileno(), far_control.fileno()))
        far.close()
        far_control.close()
        self.replies = self.control.makefile("r")

    def ask(self, msg: dict, timeout_s: float = 120.0) -> dict:
        self.control.sendall((json.dumps(msg) + "\n").encode())
        self.control.settimeout(timeout_s)
        line = self.replies.readline()
        if not line:
            raise RuntimeError(f"the child died on {msg['op']}")
        return json.loads(line)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)


def _wrong_runs(batch, specs) -> dict:
    """Per checked run: were its lent inputs as made, its output's first element, and the
    reference's on what the lent buffer held when the clock stopped."""
    seen = {}
    for run in batch.checked:
        got = batch._outputs(run, specs[run], None)
        on_lent = checking.as_list(batch.task.reference(*batch.lent_after[run]))
        seen[run] = {"inputs_as_made": batch._inputs_unchanged(run),
                     "got": [float(t.float().flatten()[0]) for t in got],
                     "ref_on_lent": [float(t.float().flatten()[0]) for t in on_lent]}
        if batch.task.name == "cross_entropy":
            seen[run]["rows"] = _loss_rows(batch, run, specs[run], seen[run]["got"][0])
    return seen


def _loss_rows(batch, run: int, specs, got: float) -> dict:
    """cross_entropy: the per-row losses the baseline left at the head of its region (its first
    allocation) against the reference's rows on the lent inputs, and their mean; where the
    output's spec points, and which rows (of this run, of any region) hold the value read."""
    logits, targets = batch.lent_after[run][:2]
    reference = torch.nn.functional.cross_entropy(logits.float(), targets, reduction="none")
    rows = batch.snapshot[run][:reference.numel() * 4].view(torch.float32)
    bad = (~torch.isclose(rows, reference, rtol=1e-4, atol=1e-3)).nonzero().flatten()
    return {"bad_rows": int(bad.numel()), "first_bad": bad[:8].tolist(),
            "got_there": rows[bad[:8]].tolist(), "expected_there": reference[bad[:8]].tolist(),
            "mean_of_rows_left": float(rows.mean()), "mean_of_reference": float(reference.mean()),
            "spec": specs, "rows_equal_to_got": (rows == got).nonzero().flatten()[:4].tolist(),
            "reference_rows_near_got":
                (reference - got).abs().lt(1e-4).nonzero().flatten()[:4].tolist(),
            "region_floats_at_16k":
                batch.snapshot[run][16384:16384 + 32].view(torch.float32).tolist()}


def two_process(child: Child, task, params, runs: int, device) -> tuple[list, list, list, int]:
    """Returns (per-run us of each batch by the judge's clock, and by the child's events
    around its runs, verdict kinds, runs a batch held, each `release`'s wall ms: the fill, a
    wait for the GPU to turn to this context included; the child's staging ms by part; each
    fill's burst ms, the staging copy's first; each batch's us from reading `done` to this
    stream's turn, where the clock stops)."""
    batch = timed_batch.TimedBatch(task, params, runs, device, True, None)
    tag = f"b{random.randrange(1 << 30)}"
    for fd, label in ((batch.buffer.export(), tag), (batch.words.export(), tag + host_words.TAG)):
        shared_memory.send_fd(child.channel, fd, label)
        os.close(fd)
    stage_ms = child.ask({"op": "stage", "task": task.name, "tag": tag, "size": batch.buffer.size,
                          "where": batch.share()})["stage_ms"]
    per_run, child_us, kinds, release_ms, turn_us = [], [], [], [], []
    try:
        for _ in range(BATCHES):
            go = random.randrange(2, 2**31)
            specs = child.ask({"op": "arm", "go": go}, timeout_s=10)["specs"]
            released, turned = time.perf_counter(), timing.SPENT_S["turn"]
            per_run.append(batch.release(go, 20.0) / batch.runs)
            release_ms.append(round((time.perf_counter() - released) * 1e3, 2))
            turn_us.append(round((timing.SPENT_S["turn"] - turned) * 1e6, 1))
            child_us.append(child.ask({"op": "last"})["us"] / batch.runs)
            verdict = batch.judge(specs, None)
            kinds.append(verdict["kind"] or "ok")
            if verdict["kind"]:
                kinds += [verdict["detail"][:300], _wrong_runs(batch, specs),
                          child.ask({"op": "recheck", "runs": batch.checked})]
    finally:
        held = batch.runs
        batch.close()
    return (per_run, child_us, kinds, held, release_ms, stage_ms,
            [round(ms, 3) for ms in [batch.staging_ms, *batch.fill_ms]], turn_us)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--instrumented", action="store_true")
    parser.add_argument("--wake", choices=("stream", "host"), default="stream",
                        help="the child's runs wait on `go` in its stream (the product) or in "
                             "a host thread that then launches them (HostWokenCase)")
    parser.add_argument("--tasks", default="vector_add,embedding,row_sum,cross_entropy")
    parser.add_argument("--cases", type=int, default=1, help="first cases of each task")
    parser.add_argument("--out", help="JSON lines, one per case (required but in the child)")
    args = parser.parse_args()
    if args.serve:
        channel_fd, control_fd = args.serve
        serve(channel_fd, control_fd, args.instrumented, args.wake)
        return
    if not args.out:
        parser.error("--out is required")
    device = detect("cuda")
    child = Child(args.instrumented, args.wake)
    try:
        for name in args.tasks.split(","):
            task = builtin().get(name)
            entry = _entry(task)
            for case in task.cases_for(device.backend)[:args.cases]:
                started = time.monotonic()
                events_us, runs = events_and_runs(task, case.params, device, entry)
                judged, own, kinds, held, release_ms, stage_ms, fill_ms, turn_us = two_process(
                    child, task, case.params, runs, device)
                row = {"task": name, "case": case.name, "instrumented": args.instrumented,
                       "wake": args.wake,
                       "fill_ms": fill_ms,
                       "events_us": events_us, "judge_us": statistics.median(judged),
                       "ratio": round(statistics.median(judged) / events_us, 3),
                       "child_ratio": round(statistics.median(own) / events_us, 3),
                       "all_us": judged, "runs": held, "release_ms": release_ms,
                       "turn_us": turn_us,
                       "stage_ms": {key: round(ms, 1) for key, ms in stage_ms.items()},
                       "kinds": kinds,
                       "seconds": round(time.monotonic() - started, 1)}
                print(json.dumps(row), flush=True)
                with open(args.out, "a") as handle:
                    handle.write(json.dumps(row) + "\n")
                torch.cuda.empty_cache()
    finally:
        child.close()


if __name__ == "__main__":
    main()
