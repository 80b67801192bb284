"""Worker processes: spawned sandboxed, limited by killing, replaced after any fault.

A time limit is enforced here and nowhere else: the parent waits on the reply pipe with a
deadline and, when it passes, SIGKILLs the worker's whole process tree; the watchdog
(`fitness.processes.watchdog`) does the same at the limit plus its grace when nobody waits on
the reply. A worker that dies, floods its output, or breaks the protocol is likewise killed
and replaced; its fault is reported as a `WorkerFault` naming the failure kind. No wait here
is unbounded, and none waits for a killed process to exit (a reaper does), so a stuck
evaluation frees its walk, and the device lock its walk holds, at its limit.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from fitness.processes import jail
from fitness.processes import protocol
from fitness.processes import shared_memory
from fitness.processes import watchdog
from fitness.device import DeviceInfo

_POLL_S = 0.05
QUIET_WAIT_S = 1.0
"""How long a timing hold waits for killed workers' processes to exit (`quiet`): a context's
teardown takes tens to hundreds of milliseconds; one stuck in the driver is not waited out."""
_QUIET_POLL_S = 0.002
GRACE_S = 10.0
"""Seconds past its reply pipe closing that waiting for a dying worker's exit status may take
(to name its death), and a checker's allowance past the limit of the request it times."""
_IDLE_WAIT_S = 60.0
"""Longest wait for an idle worker to lend: one is always given back at once (a faulted one
is replaced by a process starting), so a longer wait means the pool is broken."""
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")
"""Every worker is started from this one thread, which lives as long as the process: bwrap's
--die-with-parent kills a sandbox when the *thread* that started it exits, so a worker
started from a short-lived thread (a ThreadPoolExecutor's) would die with it."""
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class WorkerFault(Exception):
    """A worker had to be killed or died; `kind` is the Evaluation failure kind."""

    def __init__(self, kind: str, detail: str, output_tail: str = ""):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.output_tail = output_tail


class DeviceUnresponsive(RuntimeError):
    """New workers cannot start or answer a trivial device probe: the device is gone."""


_CHECKER_ENV = jail.ENV_ALLOWLIST + ("PATH", "CC", "CXX")
"""A checker's environment, by exact name: what torch, Triton and a C compiler need."""


def checker_env(device: DeviceInfo, workdir: str) -> dict[str, str]:
    """Returns the environment of a trusted checker: an allowlist, like a sandbox's (a checker
    runs no candidate code, but it needs no secret either)."""
    paths = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
    env = jail.process_env(_CHECKER_ENV, workdir, os.pathsep.join(dict.fromkeys(paths)),
                           device.backend)
    env["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "1")
    return env


@dataclasses.dataclass(frozen=True)
class SandboxSettings:
    """How candidate workers are walled in (`fitness.processes.jail`): `enabled` is False only
    under `[fitness] sandbox = "off"`; `limits` bind every sandboxed process."""

    enabled: bool = True
    limits: jail.Limits = jail.Limits()


def _descendant(pid: int) -> int:
    """Returns the innermost single-child descendant of `pid` (the sandboxed Python)."""
    return _single_children(pid)[-1]


def _single_children(pid: int) -> list[int]:
    """Returns `pid` and its descendants down the line of only children."""
    line = [pid]
    while True:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as handle:
                children = handle.read().split()
        except OSError:
            return line
        if len(children) != 1:
            return line
        pid = int(children[0])
        line.append(pid)


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _tree(pid: int) -> list[int]:
    """Returns `pid` and every process descended from it (a sandbox's whole process tree:
    bubblewrap, the worker, and whatever the candidate started)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            threads = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                with open(f"/proc/{current}/task/{thread}/children") as handle:
                    pending.extend(int(child) for child in handle.read().split())
            except (OSError, ValueError):
                pass
    return found


TICK_S = 0.01
"""What a process's tick counts in /proc round down by, at most (`CpuReading.since`)."""
_PROCESS_CLOCK = 2
"""CPUCLOCK_SCHED of a process-wide CPU clock id (`clock_getcpuclockid`'s encoding: the pid,
bit-inverted, shifted past three bits of clock kind): the scheduler's exact run time of all
of a process's threads, those that ended included."""


@dataclasses.dataclass(frozen=True)
class CpuReading:
    """The CPU seconds of a worker's process tree, read from outside it (`seconds`), with
    each process's reaped children's seconds (`children`: pid -> seconds), which a reading
    could lose later."""

    seconds: float
    children: dict

    def since(self, before: "CpuReading") -> float:
        """Returns the CPU seconds used since `before`, never less than the tree really used.
        A process's own time is exact, ended threads included; a child it reaps moves into
        its children's time in ticks rounded down, so a candidate could lower its reading by
        up to `TICK_S` a reap. Each reap is charged `TICK_S`: counted as the processes gone
        from the tree, or, where more, the processes whose reaped children's time moved (one
        reaping four children at once lost 10.1 ms, past one tick). Honest code, which reaps
        no process inside a batch, pays nothing."""
        gone = sum(1 for pid in before.children if pid not in self.children)
        moved = sum(1 for pid, seconds in self.children.items()
                    if seconds != before.children.get(pid, seconds))
        return self.seconds - before.seconds + TICK_S * max(gone, moved)


def _process_cpu(pid: int) -> tuple[float, float]:
    """Returns (the CPU seconds of process `pid`, its reaped children's included; those
    children's seconds): its own from its process CPU clock (exact), or its tick counts
    where that clock cannot be read (it is being reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    children = sum(int(f) for f in fields[13:15]) / _CLOCK_TICKS
    try:
        own = time.clock_gettime((~pid << 3) | _PROCESS_CLOCK)
    except OSError:
        own = sum(int(f) for f in fields[11:13]) / _CLOCK_TICKS
    return own + children, children


def cpu_reading(root: int) -> CpuReading:
    """Reads the CPU time of `root`'s whole process tree (`CpuReading`)."""
    seconds, children = 0.0, {}
    for pid in _tree(root):
        used, reaped = _process_cpu(pid)
        seconds += used
        children[pid] = reaped
    return CpuReading(seconds, children)


def _stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (or gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("T", "t", "Z", "X")


class WorkerProcess:
    """One worker subprocess with its pipes, its output drain and its directories.

    A "candidate" worker runs sandboxed (`fitness.processes.jail`): its private directory is its
    /sandbox, and `input_dir` (written by the trusted checker) is mounted read-only as /inputs.
    A "checker" runs unsandboxed: it never loads a candidate.
    """

    def __init__(self, role: str, device: DeviceInfo, root_dir: str, flood_limit_bytes: int,
                 sandbox: SandboxSettings, tail_bytes: int = 16 << 10):
        self.role = role
        self.untrusted = role == "candidate"  # imports candidates; jailed unless sandbox off
        self.workdir = tempfile.mkdtemp(prefix=f"{role}-", dir=root_dir)
        self.input_dir = (tempfile.mkdtemp(prefix=f"{role}-inputs-", dir=root_dir)
                          if self.untrusted else None)
        self.uses = 0
        self.retired = False
        self.ready = False
        self.ended_by: str | None = None  # why the watchdog ended it, once it has
        self.on_stuck = None  # called with a line if the process outlives its SIGKILL
        self._ticket: int | None = None  # the watchdog's, while a request is under way
        self._stopped_s = 0.0  # seconds held stopped by the judge (`frozen`), past holds
        self._stopped_at: float | None = None  # when the hold under way began
        self._stopped_before_start = 0.0  # `stopped_s` when its present child was forked
        self._reaped = False
        self._ending: dict[int, int | None] = {}  # processes it killed: pid -> start time
        self._ending_lock = threading.Lock()  # the watchdog's thread kills too
        self._server_chain: list[int] = []  # the sandbox's processes down to its fork server
        self._flood_limit_bytes = flood_limit_bytes
        self._tail_bytes = tail_bytes
        self._tail = bytearray()
        self._output_total = 0
        self._flooded = False
        self._inner_pid: int | None = None
        self.shares = False  # both ends of a walk must say so at start-up (`wait_ready`)
        self.device = device
        self.control = None  # a candidate worker's fork server (`fitness.sandbox.zygote`)
        self.generation = 0  # the fork server's children so far
        self._request_fd = self._reply_fd = -1
        self.channel = None
        if self.untrusted:
            jail.prepare_workdir(self.workdir)
            os.chmod(self.input_dir, 0o755)
            self.control, far_control = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            inherited = [far_control.detach()]
            argv, env = jail.command("fitness.sandbox.zygote",
                                     [str(inherited[0]), "namespace" if sandbox.enabled else "group",
                                      json.dumps(dataclasses.asdict(device))],
                                     workdir=self.workdir, backend=device.backend,
                                     limits=sandbox.limits, use_bwrap=sandbox.enabled,
                                     ro_dirs={self.input_dir: "/inputs"})
            if not sandbox.enabled:  # no mount namespace: the worker finds its inputs by path
                env["KERNELEVO_INPUTS"] = self.input_dir
        else:
            inherited = self._new_pipes()
            argv = [sys.executable, "-m", "fitness.judge.checker", *map(str, inherited)]
            env = checker_env(device, self.workdir)
        self.proc = _SPAWNER.submit(
            subprocess.Popen, argv, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, pass_fds=tuple(inherited)).result()
        for fd in inherited:
            os.close(fd)
        self._drain = threading.Thread(target=self._drain_output, daemon=True)
        self._drain.start()
        if self.untrusted:
            self._fork()
            return
        self._send({"op": "init", "device": device}, deadline=time.monotonic() + 10)

    def _new_pipes(self) -> list[int]:
        """Makes this end's request and reply pipes (and, on CUDA, the channel GPU buffers'
        descriptors cross: `fitness.processes.shared_memory`); returns the far ends."""
        request_read, self._request_fd = os.pipe()
        self._reply_fd, reply_write = os.pipe()
        far = [request_read, reply_write]
        if self.device.backend == "cuda":
            self.channel, far_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            far.append(far_end.detach())
        os.set_blocking(self._request_fd, False)
        self._reader = protocol.ReplyReader(self._reply_fd)
        return far

    def _fork(self) -> None:
        """Has the fork server start a fresh worker on new pipes of its own (the last
        worker's processes and files are gone first), then sends it the start-up request."""
        self._close_pipes()
        far = self._new_pipes()
        self.generation += 1
        try:
            socket.send_fds(self.control, [f"fork {self.generation}".encode()], far)
        except OSError as error:
            raise self._fault("worker_crash", f"the fork server is gone: {error}") from None
        finally:
            for fd in far:
                os.close(fd)
        self.ready = self.shares = False
        self._inner_pid = None
        self._stopped_before_start = self.stopped_s
        self._send({"op": "init", "device": dataclasses.asdict(self.device)},
                   deadline=time.monotonic() + 10)

    def renew(self) -> None:
        """Replaces the candidate worker by a fresh one from the fork server: one worker
        serves one candidate. The last candidate may have stopped the fork server (which
        then never forks) and left a process to stop it again, so every process of the
        sandbox below or beside the server is killed from here first, then the server and
        its ancestors are sent SIGCONT. Raises WorkerFault when the fork server is gone."""
        watchdog.WATCHDOG.disarm(self._ticket)
        if self._server_chain:
            self._end([pid for pid in _tree(self.proc.pid) if pid not in self._server_chain])
            for pid in self._server_chain:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGCONT)
        self.uses = 0
        self._tail.clear()
        self._output_total, self._flooded = 0, False
        self._fork()

    def _close_pipes(self) -> None:
        for fd in (self._request_fd, self._reply_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._request_fd = self._reply_fd = -1
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def limit_cpu(self, seconds: float) -> None:
        """Lowers the sandboxed process's CPU limit to (CPU used so far + seconds): the kernel
        then kills a spinning candidate at its limit even if this engine is stopped."""
        if not self.untrusted:
            return
        with contextlib.suppress(OSError, ValueError):
            if self._inner_pid is None:
                self._inner_pid = _descendant(self.proc.pid)
            soft = int(_cpu_seconds(self._inner_pid) + seconds) + 1
            _, hard = resource.prlimit(self._inner_pid, resource.RLIMIT_CPU)
            resource.prlimit(self._inner_pid, resource.RLIMIT_CPU, (min(soft, hard), hard))

    def cpu(self) -> CpuReading:
        """Reads the CPU time every process of the worker's tree has used: the judge's clock
        on the interpreter (read from /proc, outside the worker; `CpuReading.since`)."""
        return cpu_reading(self.proc.pid)

    @contextlib.contextmanager
    def frozen(self, settle_s: float = 1.0):
        """Holds every process of the worker's tree stopped (SIGSTOP) for the block, once each
        is seen stopped (`settle_s` at most): what the judge reads there (its CPU time, a
        timed run's outputs) no later code of the candidate can have changed. The tree is
        read and stopped again until none runs: one of its processes not yet stopped can
        continue another, or fork. A process already stopped (by the candidate itself) is
        left so: the judge continues only what it stopped."""
        already = {pid for pid in _tree(self.proc.pid) if _stopped(pid)}  # its own stops stay
        outer = self._stopped_at is None  # a hold inside another (a pool's over a walk's) adds none
        if outer:
            self._stopped_at = time.monotonic()
        stopped: list[int] = []
        deadline = time.monotonic() + settle_s
        while running := [pid for pid in _tree(self.proc.pid) if not _stopped(pid)]:
            for pid in running:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGSTOP)
                if pid not in already and pid not in stopped:
                    stopped.append(pid)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.0005)
        try:
            yield
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGCONT)
            if outer:
                self._stopped_s, self._stopped_at = self.stopped_s, None

    @property
    def stopped_s(self) -> float:
        """Seconds the judge has held this worker stopped (`frozen`), the hold under way
        included: none of its limits counts them."""
        since = self._stopped_at
        return self._stopped_s + (time.monotonic() - since if since is not None else 0.0)

    def stopped_since_start(self) -> float:
        """Seconds the judge has held this worker stopped since its present process started
        (`quiet` stops start-ups during timing holds)."""
        return self.stopped_s - self._stopped_before_start

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and not self.retired

    def _drain_output(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self._output_total += len(chunk)
            self._tail += chunk
            del self._tail[:-self._tail_bytes]
            if self._output_total > self._flood_limit_bytes and not self._flooded:
                self._flooded = True
                self._signal_tree()

    def output_tail(self, max_chars: int = 2000) -> str:
        return bytes(self._tail).decode(errors="replace")[-max_chars:]

    def _send(self, request: dict, deadline: float) -> None:
        if self._request_fd < 0:  # killed after an earlier fault: its pipes are closed
            raise WorkerFault("worker_crash", f"the {self.role} was ended by an earlier fault "
                              f"({self.ended_by or 'killed'}) before this "
                              f"{request.get('op', 'stage')} request", self.output_tail())
        data = protocol.encode_request(request, pickled=not self.untrusted)
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fault("timeout", "the worker stopped reading requests")
            _, writable, _ = select.select([], [self._request_fd], [], min(remaining, _POLL_S))
            if writable:
                try:
                    data = data[os.write(self._request_fd, data):]
                except BrokenPipeError:
                    raise self._fault(*self._death_reason()) from None
            elif self.proc.poll() is not None:
                raise self._fault(*self._death_reason())

    def request(self, request: dict, timeout_s: float) -> dict:
        """Sends one stage request; returns the reply or raises WorkerFault (worker killed)."""
        return self.finish(request, self.start(request, timeout_s), timeout_s)

    def start(self, request: dict, timeout_s: float) -> float:
        """Sends `request` without waiting for its reply (`early`, `finish`), the watchdog
        armed for it; returns its deadline."""
        deadline = time.monotonic() + timeout_s
        self.limit_cpu(timeout_s)
        watchdog.WATCHDOG.disarm(self._ticket)
        stopped_before = self.stopped_s
        self._ticket = watchdog.WATCHDOG.arm(
            timeout_s, f"the {self.role}'s {request.get('op', 'stage')} request",
            functools.partial(self.end, generation=self.generation),
            extension=lambda: self.stopped_s - stopped_before)
        self._send(request, deadline)
        return deadline

    def early(self, wait_s: float) -> dict | None:
        """Returns the reply to the started request if it comes within `wait_s`, else None
        (the request goes on); a death or a broken protocol raises WorkerFault."""
        try:
            return self._await_reply(time.monotonic() + wait_s, "", fault_on_time=False)
        except TimeoutError:
            return None

    def finish(self, request: dict, deadline: float, timeout_s: float) -> dict:
        """Returns the reply to the started `request`, waiting until `deadline`."""
        reply = self._await_reply(deadline, f"the {request.get('op', 'stage')} request ran "
                                            f"past its {timeout_s:g} s limit", timeout_s)
        if reply.get("fatal"):
            self.retired = True  # it is exiting: never lend it again
        return reply

    def answered(self) -> bool:
        """Whether this worker is ready, or its start-up reply (or its death) can be read
        without waiting."""
        if self.ready:
            return self.alive
        if self._reply_fd < 0:
            return False
        with contextlib.suppress(OSError, ValueError):
            return bool(select.select([self._reply_fd], [], [], 0)[0])
        return False

    def wait_ready(self, timeout_s: float) -> dict:
        """Waits for the start-up handshake (imports and a device probe); the handshake
        also says whether the process can map shared GPU buffers."""
        reply = self._await_reply(time.monotonic() + timeout_s,
                                  f"the worker did not start within {timeout_s:g} s")
        self.ready = reply.get("ok", False)
        self.shares = self.channel is not None and reply.get("shares") is True
        if self.control is not None and self.ready and not self._server_chain:
            # the first child has run no candidate yet: the line ends server, child
            self._server_chain = _single_children(self.proc.pid)[:-1]
        if not self.ready:
            self.kill()
            raise WorkerFault("harness_error", reply.get("trace", "worker failed to start"))
        return reply

    def _await_reply(self, deadline: float, timeout_detail: str, timeout_s: float = 0.0,
                     fault_on_time: bool = True) -> dict:
        """Returns the next reply; past `deadline` the worker is killed (a timeout fault), or
        with `fault_on_time` False TimeoutError is raised and it lives on. Time the judge
        held it stopped meanwhile moves `deadline` on. A timeout fault says how long the
        request ran (given its `timeout_s` limit) and how long it was held stopped: where a
        stage's wall time went when its verdict came late."""
        stopped_before = self.stopped_s
        while True:
            try:
                reply = self._reader.take()
            except protocol.ProtocolError as error:
                raise self._fault("worker_crash", f"protocol violation: {error}") from None
            if reply is not None:
                watchdog.WATCHDOG.disarm(self._ticket)
                return reply
            if self.ended_by is not None:
                raise self._fault("timeout", self.ended_by)
            if self._flooded:
                raise self._fault("output_flood", f"the candidate wrote more than "
                                  f"{self._flood_limit_bytes >> 20} MiB to stdout/stderr")
            remaining = deadline + self.stopped_s - stopped_before - time.monotonic()
            if remaining <= 0:
                if not fault_on_time:
                    raise TimeoutError(timeout_detail)
                stopped_s = self.stopped_s - stopped_before
                ran_s = time.monotonic() - deadline + timeout_s - stopped_s
                raise self._fault("timeout", f"{timeout_detail} (ended after {ran_s:.2f} s "
                                  f"running and {stopped_s:.2f} s held stopped by the judge)"
                                  if timeout_s else timeout_detail)
            readable, _, _ = select.select([self._reply_fd], [], [], min(remaining, _POLL_S))
            if readable and not self._reader.feed():
                reason = self._death_reason()  # waits for the exit, `GRACE_S` at most
                if self._flooded:
                    continue
                raise self._fault(*reason)

    def _exited(self, timeout_s: float) -> bool:
        """Returns whether the worker exited within `timeout_s`."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def _exit_code(self) -> int | None:
        """Returns the worker's exit status once it has exited (`GRACE_S` at most; None: it
        has not): a fork server's child's as the server reports it, else the process's."""
        if self.control is not None:
            deadline = time.monotonic() + GRACE_S
            while (remaining := deadline - time.monotonic()) > 0 and self.proc.poll() is None:
                self.control.settimeout(min(remaining, _POLL_S))
                try:
                    message = self.control.recv(64).decode().split()
                except (socket.timeout, OSError, UnicodeDecodeError):
                    continue
                if message[:2] == ["exit", str(self.generation)]:
                    time.sleep(_POLL_S)  # its last output reaches the drain
                    return int(message[2])
            if self.proc.poll() is None:
                return None
        if not self._exited(GRACE_S):
            return None
        self._drain.join(timeout=1.0)
        code = self.proc.returncode
        # bwrap reports a child killed by signal N as exit status 128 + N.
        return -(code - 128) if self.untrusted and 128 < code < 160 else code

    def _death_reason(self) -> tuple[str, str]:
        if self.ended_by is not None:
            return "timeout", self.ended_by
        code = self._exit_code()
        if code is None:
            return "timeout", f"the worker closed its pipe but had not exited {GRACE_S:g} s later"
        tail = self.output_tail(20000)
        if "Fatal Python error" in tail and "triton" in tail.split("Fatal Python error")[-1]:
            return "illegal_memory_access", "the worker crashed inside a Triton kernel launch"
        if code == protocol.STALL_EXIT:
            return "timeout", ("the candidate's own Python code ran past the stall limit "
                               "(stall_s) without launching a kernel: a host-side loop")
        signum = -code if code < 0 else 0
        if signum == signal.SIGXCPU:
            return "timeout", "the worker ran past its CPU-time limit (killed by the kernel)"
        if signum:
            return "worker_crash", f"the worker was killed by {signal.Signals(signum).name}"
        return "worker_crash", f"the worker exited with status {code}"

    def _fault(self, kind: str, detail: str) -> WorkerFault:
        self.kill()
        return WorkerFault(kind, detail, self.output_tail())

    def _signal_tree(self) -> list[int]:
        """SIGKILLs the worker's whole process tree (a fork server's child and what it
        started lead groups of their own) and its group; waits for nothing. Returns the tree."""
        tree = _tree(self.proc.pid)
        self._end(tree, self.proc.pid)
        return tree

    def _end(self, pids: list[int], group: int | None = None) -> None:
        """SIGKILLs `pids` (and `group`), kept in `ending` until they are gone."""
        with self._ending_lock:
            self._ending.update({pid: watchdog.start_time(pid) for pid in pids})
        watchdog.end_tree(pids, group)

    def ending(self) -> list[int]:
        """Returns the processes this worker killed that have not yet exited: a GPU process's
        exit tears its context down and unmaps its memory, device work outside every hold."""
        with self._ending_lock:
            for pid, since in list(self._ending.items()):
                if not since or watchdog.start_time(pid) != since:
                    del self._ending[pid]
            return list(self._ending)

    def end(self, reason: str, generation: int) -> None:
        """The watchdog's end of the worker, from its own thread (a no-op once the fork
        server's child of `generation` was replaced): the process tree gets SIGKILL, and
        whoever waits on a reply (now or later) gets a timeout naming `reason`; the pipes
        and directories go with `kill`, on the walk's thread."""
        if generation != self.generation:
            return
        self.ended_by = reason
        self.retired = True
        self._signal_tree()

    def kill(self) -> None:
        """Kills the worker's process tree and group at once, and hands the process to a
        reaper (`watchdog.reap`), which removes its directories once it has exited: nothing
        here waits for a process killed inside a GPU driver call to die."""
        self.retired = True
        watchdog.WATCHDOG.disarm(self._ticket)
        tree = self._signal_tree()
        self._close_pipes()
        if self.control is not None:
            self.control.close()
        if not self._reaped:
            self._reaped = True
            watchdog.reap(self.proc, tree, self._remove_dirs, self._stuck)

    def _remove_dirs(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.input_dir is not None:
            shutil.rmtree(self.input_dir, ignore_errors=True)

    def _stuck(self, seconds: float, pids: list[int]) -> None:
        if self.on_stuck is not None:
            self.on_stuck(f"{len(pids)} process(es) of a {self.role} worker on {self.device.name} "
                          f"(pids {', '.join(map(str, pids))}) have not exited {seconds:g} s "
                          "after their SIGKILL: a device context is not torn down")


@contextlib.contextmanager
def quiet(pools, wait_s: float = QUIET_WAIT_S, starts: bool = True):
    """Holds the device free of the pools' own comings and goings for a timing hold: waits
    (`wait_s` at most) for the processes they killed to exit, and holds the workers still
    starting stopped (`stopped`; not without `starts`). Their ends and start-ups are device
    work outside every hold (a context torn down unmaps its memory; one made runs the
    probe): beside the start-ups copies of one honest kernel read up to 13x slow, in
    batches of a few runs where a time slice of milliseconds is most of the batch, while the
    baselines, timed with every candidate worker stopped, did not (evidence:
    RESULTS.md#quiet-holds). New ones wait for the hold to end (`WorkerPool`
    `device_work`)."""
    pools = list({id(pool): pool for pool in pools if pool is not None}.values())
    deadline = time.monotonic() + wait_s
    while any(pool.ending() for pool in pools) and time.monotonic() < deadline:
        time.sleep(_QUIET_POLL_S)
    with stopped(worker for pool in pools if starts for worker in pool.starting()):
        yield


@contextlib.contextmanager
def stopped(workers, settle_s: float = 0.1):
    """Holds every one of `workers` stopped for the block (`WorkerProcess.frozen`, all seen
    stopped within `settle_s`, each signalled at least once): their stage limits are
    extended by as much."""
    deadline = time.monotonic() + settle_s
    with contextlib.ExitStack() as stack:
        for worker in workers:
            stack.enter_context(worker.frozen(settle_s=max(0.0, deadline - time.monotonic())))
        yield


def relay_fd(checker: WorkerProcess, worker: WorkerProcess, token: str, timeout_s: float) -> None:
    """Passes the descriptor of a shared buffer, labelled `token`, from a checker to a
    worker (they cannot reach each other: the worker is sandboxed). The engine keeps no
    copy. A checker that sends none is the harness's fault; a worker that cannot take it
    has died."""
    try:
        fd = shared_memory.receive_fd(checker.channel, token, timeout_s)
    except shared_memory.SharedMemoryError as error:
        raise WorkerFault("harness_error", f"checker: {error}") from None
    try:
        worker.channel.settimeout(timeout_s)
        shared_memory.send_fd(worker.channel, fd, token)
    except OSError as error:
        raise WorkerFault("worker_crash", f"the worker's channel is closed: {error}") from None
    finally:
        os.close(fd)


STARTUP_PHASES = ("device", "probe")
"""What a fresh worker says its start-up took (`fitness.sandbox.worker.Worker`), in the pool's
`started_s`: its device context, and its probe kernel. Beside them there, by the pool's own
clock, "stopped": what of them the judge held it stopped (`quiet`)."""


class WorkerPool:
    """`size` workers of one role lent at a time; `lease()` lends one exclusively.

    A faulted worker is killed and a new process starts importing at once. `spares` more
    start beside the `size` lent ones, and a lease takes a worker that is ready (or has
    answered its start-up) first: a candidate that crashes or hangs kills its worker, and
    without spares the next walk would wait out the replacement's start-up (evidence:
    RESULTS.md#pool-spares). Consecutive start-up failures mean the device itself is gone
    (`DeviceUnresponsive`).

    A worker's end and its replacement's start are device work (a context torn down, one
    made): each begins inside `device_work()` (the Evaluator's: a share of the device
    lock), so that none begins while a case is timed (`quiet`).
    """

    def __init__(self, device: DeviceInfo, size: int, role: str, root_dir: str,
                 sandbox: SandboxSettings = SandboxSettings(), ready_timeout_s: float = 120.0,
                 flood_limit_bytes: int = 16 << 20, max_uses: int = 50,
                 max_start_failures: int = 3, spares: int = 0,
                 device_work=contextlib.nullcontext):
        if size < 1:
            raise ValueError(f"a worker pool needs at least 1 worker, got {size}")
        if spares < 0:
            raise ValueError(f"spares must be >= 0, got {spares}")
        self.device = device
        self.role = role
        self._new_worker = functools.partial(WorkerProcess, role, device, root_dir,
                                             flood_limit_bytes, sandbox)
        self._ready_timeout_s = ready_timeout_s
        self._device_work = device_work
        self._max_uses = max_uses
        self._max_start_failures = max_start_failures
        self._slots = threading.BoundedSemaphore(size)
        self._idle: collections.deque[WorkerProcess] = collections.deque()
        self._available = threading.Condition()
        self._all: set[WorkerProcess] = set()
        self._gone: list[WorkerProcess] = []  # replaced, their processes maybe still ending
        self._lock = threading.Lock()
        self._closed = False
        self.respawns = 0
        self.ready_wait_s = 0.0  # leases waiting for a worker's start-up to finish
        self.started_s: collections.Counter = collections.Counter()  # start-ups' own phases
        self.renew_s = 0.0  # leases' ends spent putting a fresh worker in the used one's place
        self.stuck: list[str] = []  # a line per killed process that outlived its SIGKILL
        for _ in range(size + spares):
            self._give_back(self._spawn())

    def _spawn(self) -> WorkerProcess:
        worker = self._new_worker()
        worker.on_stuck = self.stuck.append
        with self._lock:
            self._all.add(worker)
        return worker

    def _give_back(self, worker: WorkerProcess) -> None:
        with self._available:
            self._idle.append(worker)
            self._available.notify()

    def _take_idle(self) -> WorkerProcess:
        """Returns the longest idle worker that is ready or has answered its start-up, else
        the longest idle one."""
        with self._available:
            if not self._available.wait_for(lambda: self._idle, timeout=_IDLE_WAIT_S):
                raise DeviceUnresponsive(f"no {self.role} worker on {self.device.name} came back "
                                         f"to the pool within {_IDLE_WAIT_S:g} s")
            chosen = next((worker for worker in self._idle if worker.answered()), self._idle[0])
            self._idle.remove(chosen)
            return chosen

    def _replace(self, worker: WorkerProcess) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)
            self._gone.append(worker)
            if self._closed:
                return
            self.respawns += 1
        self._give_back(self._spawn())

    def _renew(self, worker: WorkerProcess) -> None:
        """Gives back `worker` with a fresh child of its fork server, or replaces it when
        the server is gone."""
        try:
            worker.renew()
        except WorkerFault:
            self._replace(worker)
            return
        self._give_back(worker)

    def _ready_worker(self) -> WorkerProcess:
        failures = []
        while len(failures) < self._max_start_failures:
            worker = self._take_idle()
            if worker.ready and worker.alive:
                return worker
            waited = time.monotonic()
            try:
                started = worker.wait_ready(self._ready_timeout_s).get("started_s")
                if isinstance(started, dict):  # the worker's own word, for the stats only
                    self.started_s.update({phase: float(seconds) for phase, seconds in started.items()
                                           if phase in STARTUP_PHASES
                                           and isinstance(seconds, (int, float))})
                    self.started_s["starts"] += 1
                    self.started_s["stopped"] += worker.stopped_since_start()
                return worker
            except WorkerFault as fault:
                failures.append(f"{fault} {fault.output_tail[-500:]}".strip())
                with self._device_work():
                    self._replace(worker)
            finally:
                self.ready_wait_s += time.monotonic() - waited
        raise DeviceUnresponsive(f"{self.role} workers on {self.device.name} failed to start "
                                 f"{len(failures)} times in a row; last: {failures[-1]}")

    @contextlib.contextmanager
    def lease(self):
        """Yields a ready worker; it returns to the pool, or is replaced if it faulted."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        with self._slots:
            worker = self._ready_worker()
            try:
                yield worker
            finally:
                ended = time.monotonic()
                worker.uses += 1
                if worker.alive and worker.uses < self._max_uses and not self._closed:
                    self._give_back(worker)
                else:
                    with self._device_work():
                        if worker.alive and worker.control is not None and not self._closed:
                            self._renew(worker)
                        else:
                            self._replace(worker)
                self.renew_s += time.monotonic() - ended

    @contextlib.contextmanager
    def frozen(self, but=None):
        """Holds every worker of this pool but `but` stopped for the block
        (`WorkerProcess.frozen`): no candidate code runs on the host while a baseline is
        timed, so none can load the machine to slow the number every speedup of its task is
        divided by, nor while a case is timed by CPU time (`clock.time_case`)."""
        with self._lock:
            workers = [worker for worker in self._all if worker.alive and worker is not but]
        with stopped(workers):
            yield

    def starting(self) -> list[WorkerProcess]:
        """Returns the workers still starting (no start-up reply yet): making a device
        context, running the probe kernel."""
        with self._lock:
            workers = list(self._all)
        return [worker for worker in workers if worker.alive and not worker.answered()]

    def ending(self) -> list[int]:
        """Returns the processes of this pool's workers killed and not yet exited."""
        with self._lock:
            self._gone = [worker for worker in self._gone if worker.ending()]
            workers = list(self._all) + self._gone
        return [pid for worker in workers for pid in worker.ending()]

    def close(self) -> None:
        """Kills every worker, then waits `GRACE_S` at most, all together, for them to exit."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
        for worker in workers:
            worker.kill()
        deadline = time.monotonic() + GRACE_S
        for worker in workers:
            worker._exited(max(0.0, deadline - time.monotonic()))
