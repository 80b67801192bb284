"""Feasibility of the judge's clock on a GPU (docs/design.md, "The timed batch (GPU)").

Two processes, a judge and a worker, share one VMM buffer (`fitness.processes.shared_memory`)
holding the sync words, N input sets and N output slots. The worker's stream waits for `go`,
runs N additions, writes `done`; the judge times go..done with its own events and snapshots
the slots right behind them. Printed per size and mode, one JSON row each (also to --out):
the judge's per-run latency against in-process event timing with the L2 flushed (today's
clock), the handoff floor `c` (no runs), and how often a worker that cheats the order
(work after `done`, or `done` written early) gets a complete snapshot.

`--triton` runs a Triton addition instead of torch's; `--idle N` keeps N more processes
with an idle CUDA context beside the two (as an Evaluator's pools do); mode `host` replaces
the judge's events and its stream's wait on `done` with the host's clock around `go` and
`done` in a page of host memory both processes map (the worker's stream waits on and writes
it through `cuMemHostRegister`): no work of the judge's context is pending during the runs.

    python experiments/perf/judge_clock_probe.py --out rows.jsonl      (CUDA only)
    python experiments/perf/judge_clock_probe.py --sizes 24 --modes graph,host --triton --idle 12
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from fitness.processes import shared_memory, stream_sync  # noqa: E402

SYNC_BYTES = 512
HOST_PAGE = 4096


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask),
             mask=mask)


def triton_add(a, b, out) -> None:
    _add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)


def _host_words(fd: int):
    """Maps the shared host page and registers it with the driver; returns (the mapping,
    its device address)."""
    from fitness.processes.shared_memory import driver

    page = mmap.mmap(fd, HOST_PAGE)
    host = ctypes.addressof(ctypes.c_char.from_buffer(page))
    lib = driver()
    lib("cuMemHostRegister_v2", ctypes.c_void_p(host), ctypes.c_size_t(HOST_PAGE), ctypes.c_uint(0x2))
    device = ctypes.c_ulonglong()
    lib("cuMemHostGetDevicePointer_v2", ctypes.byref(device), ctypes.c_void_p(host), ctypes.c_uint(0))
    return page, device.value


def _views(buffer, n: int, runs: int):
    """Returns (go, done, inputs [(a, b)] per run, outputs per run) as views of `buffer`."""
    words = buffer.view(0, torch.int32, [2], [1], 0)
    per = n * 4
    inputs = [(buffer.view(SYNC_BYTES + (2 * r) * per, torch.float32, [n], [1], 0),
               buffer.view(SYNC_BYTES + (2 * r + 1) * per, torch.float32, [n], [1], 0))
              for r in range(runs)]
    outputs = [buffer.view(SYNC_BYTES + (2 * runs + r) * per, torch.float32, [n], [1], 0)
               for r in range(runs)]
    return words, inputs, outputs


def _buffer_bytes(n: int, runs: int) -> int:
    return SYNC_BYTES + 3 * runs * n * 4


def worker(channel_fd: int, control_fd: int, host_fd: int, use_triton: bool) -> None:
    channel = socket.socket(fileno=channel_fd)
    control = socket.socket(fileno=control_fd).makefile("rw")
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    page, host_words = _host_words(host_fd)
    add = triton_add if use_triton else (lambda a, b, out: torch.add(a, b, out=out))
    stream = torch.cuda.Stream()
    state: dict = {}
    for line in control:
        msg = json.loads(line)
        if msg["op"] == "map":
            for old in state.get("buffers", []):
                old.release()
            fd = shared_memory.receive_fd(channel, msg["tag"], 30)
            buffer = shared_memory.SharedBuffer.open(fd, msg["size"], 0)
            os.close(fd)
            words, inputs, outputs = _views(buffer, msg["n"], msg["runs"])
            state.update(buffers=[buffer], words=words, inputs=inputs, outputs=outputs,
                         mode=msg["mode"], graph=None)
            with torch.cuda.stream(stream):  # warm-up: a first launch loads its module, which
                for (a, b), out in zip(inputs, outputs):  # synchronizes the context and would
                    out.copy_(a + b)  # wait on `go` for ever
                    add(a, b, out)
            stream.synchronize()
            if msg["mode"] == "graph" and msg["runs"]:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=stream):
                    for (a, b), out in zip(inputs, outputs):
                        add(a, b, out)
                state["graph"] = graph
            control.write("{}\n"); control.flush()
            continue
        token, cheat = msg["token"], msg.get("cheat")
        go, done = state["words"].data_ptr(), state["words"].data_ptr() + 4
        if msg.get("host"):
            go, done = host_words, host_words + 4
        handle = stream.cuda_stream
        if cheat == "early_done":
            side = torch.cuda.Stream()
            stream_sync.write_value(side.cuda_stream, done, token)
        stream_sync.wait_value(handle, go, token)
        with torch.cuda.stream(stream):
            if cheat == "after_done":
                stream_sync.write_value(handle, done, token)
            if state["graph"] is not None:
                state["graph"].replay()
            else:
                for (a, b), out in zip(state["inputs"], state["outputs"]):
                    if state["mode"] == "copy":
                        out.copy_(a + b)
                    else:
                        add(a, b, out)
        if cheat != "after_done":
            stream_sync.write_value(handle, done, token)
        control.write("{}\n"); control.flush()


def event_timing_us(n: int, add, reps: int = 50) -> float:
    """Today's clock: in-process events around the addition with the L2 flushed."""
    a, b, out = (torch.randn(n, device="cuda") for _ in range(3))
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    samples = []
    for _ in range(5):
        add(a, b, out)
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        add(a, b, out)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return statistics.median(samples)


class Judge:
    def __init__(self, use_triton: bool):
        self.channel, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        control, far_control = socket.socketpair()
        host_fd = os.memfd_create("judge-words")
        os.ftruncate(host_fd, HOST_PAGE)
        self.page = mmap.mmap(host_fd, HOST_PAGE)
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", str(far.fileno()),
                                      str(far_control.fileno()), str(host_fd)]
                                     + (["--triton"] if use_triton else []),
                                     pass_fds=(far.fileno(), far_control.fileno(), host_fd))
        far.close(); far_control.close(); os.close(host_fd)
        self.control = control
        self.pending = b""
        self.stream = torch.cuda.Stream()
        self.side = torch.cuda.Stream()
        self.buffer = None
        self.armed_late = 0

    def send(self, msg: dict) -> None:
        self.control.sendall((json.dumps(msg) + "\n").encode())

    def answered(self, timeout_s: float) -> bool:
        """Waits up to `timeout_s` for the worker's next reply line."""
        self.control.settimeout(timeout_s)
        while b"\n" not in self.pending:
            try:
                chunk = self.control.recv(4096)
            except socket.timeout:
                return False
            if not chunk:
                raise RuntimeError("the worker died")
            self.pending += chunk
        self.pending = self.pending.split(b"\n", 1)[1]
        return True

    def ask(self, msg: dict, timeout_s: float = 60) -> None:
        self.send(msg)
        if not self.answered(timeout_s):
            raise RuntimeError(f"no reply to {msg['op']} in {timeout_s} s")

    def map(self, n: int, runs: int, mode: str) -> None:
        if self.buffer is not None:
            self.buffer.release()
        self.buffer = shared_memory.SharedBuffer.create(_buffer_bytes(n, runs), 0)
        self.words, self.inputs, self.outputs = _views(self.buffer, n, runs)
        for a, b in self.inputs:
            a.normal_(); b.normal_()
        torch.cuda.synchronize()
        fd = self.buffer.export()
        shared_memory.send_fd(self.channel, fd, "b")
        os.close(fd)
        self.ask({"op": "map", "tag": "b", "size": _buffer_bytes(n, runs), "n": n,
                  "runs": runs, "mode": mode})

    def host_batch(self) -> tuple[float, int]:
        """Returns (go..done microseconds by the host's clock, runs whose snapshot is right):
        the inputs made and synchronized first, `go` stored in the shared host page, `done`
        polled there; nothing of this context is queued while the runs go."""
        token = random.randrange(1, 2**31)
        with torch.cuda.stream(self.stream):
            for out in self.outputs:
                out.fill_(float("nan"))
            for a, b in self.inputs:
                a.normal_(); b.normal_()
        self.stream.synchronize()
        self.send({"op": "arm", "token": token, "host": True})
        armed = self.answered(2.0)
        deadline = time.monotonic() + 10
        began = time.perf_counter_ns()
        struct.pack_into("<i", self.page, 0, token)
        while struct.unpack_from("<i", self.page, 4)[0] != token:
            if time.monotonic() > deadline:
                raise RuntimeError("the worker never wrote done (host)")
        ended = time.perf_counter_ns()
        with torch.cuda.stream(self.stream):
            snapshot = [out.clone() for out in self.outputs]
            expected = [a + b for a, b in self.inputs]
        self.stream.synchronize()
        if not armed and not self.answered(10.0):
            raise RuntimeError("the worker did not finish arming after go")
        self.armed_late += not armed
        right = sum(bool(torch.equal(s, e)) for s, e in zip(snapshot, expected))
        return (ended - began) / 1e3, right

    def batch(self, cheat: str | None = None) -> tuple[float, int]:
        """Returns (go..done microseconds, runs whose snapshot is right)."""
        token = random.randrange(1, 2**31)
        with torch.cuda.stream(self.stream):
            self.words.zero_()
            for out in self.outputs:
                out.fill_(float("nan"))
        self.stream.synchronize()
        self.send({"op": "arm", "token": token, "cheat": cheat})
        armed = self.answered(2.0)  # not armed: its host code waits on go; release anyway
        go, done = self.words.data_ptr(), self.words.data_ptr() + 4
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            for a, b in self.inputs:
                a.normal_(); b.normal_()
            start.record()
            stream_sync.write_value(self.stream.cuda_stream, go, token)
            stream_sync.wait_value(self.stream.cuda_stream, done, token)
            end.record()
            snapshot = [out.clone() for out in self.outputs]
            expected = [a + b for a, b in self.inputs]
        deadline = time.monotonic() + 10
        while not end.query():
            if time.monotonic() > deadline:
                stream_sync.write_value(self.side.cuda_stream, done, token)
                raise RuntimeError("the worker never wrote done")
            time.sleep(0)
        self.stream.synchronize()
        if not armed and not self.answered(10.0):
            raise RuntimeError("the worker did not finish arming after go")
        self.armed_late += not armed
        right = sum(bool(torch.equal(s, e)) for s, e in zip(snapshot, expected))
        return start.elapsed_time(end) * 1e3, right


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", nargs=3, type=int)
    parser.add_argument("--out", default=None)
    parser.add_argument("--batches", type=int, default=9)
    parser.add_argument("--sizes", default="20,22,24,26", help="log2 of the elements, comma-separated")
    parser.add_argument("--modes", default="direct,copy,graph", help="of direct, copy, graph, host")
    parser.add_argument("--triton", action="store_true")
    parser.add_argument("--idle", type=int, default=0)
    parser.add_argument("--no-cheats", action="store_true")
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker, args.triton)
        return
    idle = [subprocess.Popen([sys.executable, "-c", "import torch, time; "
                              "torch.zeros(1, device='cuda'); time.sleep(3600)"])
            for _ in range(args.idle)]
    try:
        _probe(args)
    finally:
        for process in idle:
            process.kill()


def _probe(args) -> None:
    out = open(args.out, "a") if args.out else None

    def emit(row: dict) -> None:
        print(json.dumps(row), flush=True)
        if out:
            out.write(json.dumps(row) + "\n"); out.flush()

    judge = Judge(args.triton)
    add = triton_add if args.triton else (lambda a, b, out: torch.add(a, b, out=out))
    judge.map(1 << 10, 0, "direct")
    floor = [judge.batch()[0] for _ in range(30)]
    emit({"what": "handoff_floor_us", "median": statistics.median(floor),
          "min": min(floor), "max": max(floor)})
    for n in (1 << int(size) for size in args.sizes.split(",")):
        events_us = event_timing_us(n, add)
        runs = max(4, min(64, int(3000 / max(events_us, 1))))
        for mode in args.modes.split(","):
            judge.map(n, runs, "graph" if mode == "host" else mode)
            measure = judge.host_batch if mode == "host" else judge.batch
            measure()  # warm
            lat, wrong = [], 0
            for _ in range(args.batches):
                us, right = measure()
                lat.append(us / runs)
                wrong += runs - right
            emit({"what": "latency", "n": n, "mode": mode, "runs": runs, "triton": args.triton,
                  "idle": args.idle,
                  "events_us": events_us, "judge_us": statistics.median(lat),
                  "judge_min_us": min(lat), "judge_max_us": max(lat),
                  "ratio": statistics.median(lat) / events_us, "wrong_runs": wrong,
                  "armed_late": judge.armed_late})
            judge.armed_late = 0
        if args.no_cheats:
            continue
        judge.map(n, runs, "direct")
        for cheat in ("after_done", "early_done"):
            complete = total = 0
            times = []
            for _ in range(5):
                us, right = judge.batch(cheat)
                complete += right
                total += runs
                times.append(us / runs)
            emit({"what": "cheat", "n": n, "cheat": cheat, "runs_right": complete,
                  "runs": total, "judge_us": statistics.median(times), "events_us": events_us})


if __name__ == "__main__":
    main()
