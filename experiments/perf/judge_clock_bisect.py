"""The step between `judge_clock_diagnose.py` (both sides of a timed batch in one process:
at or under event timing) and the Evaluator (`judge_clock_check.py`: 1.2-1.8x on memory-bound
baselines, and cross_entropy's baseline judged wrong), RESULTS.md §20b.

The checker's `TimedBatch` stays in this process, exactly as the checker drives it
(`release`: fill, start, go, wait for done, end, snapshot; then `judge`); the worker's
`TimedCase` runs in a plain child process started here: no pool, no fork server, no
sandbox, no engine in between. `--instrumented` gives the child the worker's own timed call
(its launch counter, op recorder and watches). Per case, one JSON row to --out and stdout:
events (in-process, cache flushed), this two-process reading, and the batches' verdicts.
If this reads like events, the gap is in what the Evaluator adds (its processes and request
loops); if it reads like the Evaluator, it is in these two classes across two processes.

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
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import torch  # noqa: E402

from benchmarks.registry import builtin  # noqa: E402
from fitness.device import detect  # noqa: E402
from fitness.judge import timed_batch  # noqa: E402
from fitness.processes import shared_memory  # noqa: E402
from fitness.sandbox.timed import TimedCase  # noqa: E402
from judge_clock_diagnose import (BATCHES, _caller, _entry, events_and_runs,  # noqa: E402
                                  worker_caller)


def serve(channel_fd: int, control_fd: int, instrumented: bool) -> None:
    """The child: stages a case on the buffer it is sent, arms a batch on each request."""
    channel = socket.socket(fileno=channel_fd)
    control = socket.socket(fileno=control_fd).makefile("rw")
    device = detect("cuda")
    case, buffer = None, None
    for line in control:
        msg = json.loads(line)
        if msg["op"] == "stage":
            if buffer is not None:
                torch.cuda.synchronize()
                buffer.release()
            task = builtin().get(msg["task"])
            entry = _entry(task)
            fd = shared_memory.receive_fd(channel, msg["tag"], 30)
            buffer = shared_memory.SharedBuffer.open(fd, msg["size"], torch.cuda.current_device())
            os.close(fd)
            call = (worker_caller(device, entry, os.path.abspath(f"diagnose_{task.name}.py"))
                    if instrumented else _caller(entry))
            case = TimedCase(buffer, msg["where"], call)
            reply = case.stage()
        else:  # arm
            reply = {"specs": case.arm(msg["go"])}
        control.write(json.dumps(reply) + "\n")
        control.flush()


class Child:
    """The worker's side in a child process, over a socket pair (requests, one JSON line
    each) and a datagram pair (the buffer's descriptor)."""

    def __init__(self, instrumented: bool):
        self.channel, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.control, far_control = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(far.fileno()), str(far_control.fileno())]
            + (["--instrumented"] if instrumented else []),
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


def two_process(child: Child, task, params, runs: int, device) -> tuple[list, list, int, str]:
    """Returns (per-run us of each batch, verdict kinds, runs a batch held, the method)."""
    batch = timed_batch.TimedBatch(task, params, runs, device, True, None)
    tag = f"b{random.randrange(1 << 30)}"
    fd = batch.buffer.export()
    shared_memory.send_fd(child.channel, fd, tag)
    os.close(fd)
    method = child.ask({"op": "stage", "task": task.name, "tag": tag, "size": batch.buffer.size,
                        "where": batch.share()})["method"]
    per_run, kinds = [], []
    try:
        for _ in range(BATCHES):
            go = random.randrange(1, 2**31)
            specs = child.ask({"op": "arm", "go": go}, timeout_s=10)["specs"]
            per_run.append(batch.release(go, 20.0) / batch.runs)
            verdict = batch.judge(specs, None)
            kinds.append(verdict["kind"] or "ok")
            if verdict["kind"]:
                kinds.append(verdict["detail"][:300])
    finally:
        held = batch.runs
        batch.close()
    return per_run, kinds, held, method


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--instrumented", action="store_true")
    parser.add_argument("--tasks", default="vector_add,embedding,row_sum,cross_entropy")
    parser.add_argument("--cases", type=int, default=1, help="first cases of each task")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.serve:
        serve(*args.serve, args.instrumented)
        return
    device = detect("cuda")
    child = Child(args.instrumented)
    try:
        for name in args.tasks.split(","):
            task = builtin().get(name)
            entry = _entry(task)
            for case in task.cases_for(device.backend)[:args.cases]:
                started = time.monotonic()
                events_us, runs = events_and_runs(task, case.params, device, entry)
                judged, kinds, held, method = two_process(child, task, case.params, runs, device)
                row = {"task": name, "case": case.name, "instrumented": args.instrumented,
                       "events_us": events_us, "two_process_us": statistics.median(judged),
                       "ratio": round(statistics.median(judged) / events_us, 3),
                       "all_us": judged, "runs": held, "method": method, "kinds": kinds,
                       "seconds": round(time.monotonic() - started, 1)}
                print(json.dumps(row), flush=True)
                with open(args.out, "a") as handle:
                    handle.write(json.dumps(row) + "\n")
                torch.cuda.empty_cache()
    finally:
        child.close()


if __name__ == "__main__":
    main()
