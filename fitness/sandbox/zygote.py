"""The fork server of one sandbox: a clean worker per candidate without a cold start.

Run in the sandbox as `python -m fitness.sandbox.zygote CONTROL SCOPE`. It imports torch,
Triton and the worker (seconds of a worker's start-up) and never touches the device (CUDA
does not survive a fork). For each "fork" message on CONTROL, which carries the new
worker's request, reply and (on CUDA) channel descriptors, it first ends every other
process of the sandbox and empties its private directory, then forks: the child closes
CONTROL and serves one candidate on its own descriptors (`fitness.sandbox.worker._serve`).
So nothing a candidate left behind (processes, threads, files, patched modules, pipes it
held) reaches the next one, and a child can never read the next child's descriptors. The
child's exit status goes back on CONTROL as "exit GENERATION STATUS".

SCOPE "namespace": the sandbox has its own PID namespace, and every process but its init and
this one is ended. "group" (`[fitness] sandbox = "off"`): only the child's process group.
"""

from __future__ import annotations

import faulthandler
import os
import select
import shutil
import signal
import socket
import sys


def _preload() -> None:
    """Imports what every worker needs, and the meta rules a capture's `Arena` runs,
    without initialising any device."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    # what a worker's first launch imports (its probe's), pure Python: RESULTS.md §35
    import triton.compiler.code_generator  # noqa: F401
    import triton.language.semantic  # noqa: F401
    import triton.runtime.interpreter  # noqa: F401

    from fitness.sandbox import instrument, timed, worker  # noqa: F401

    timed.load_meta_rules()
    triton_key()()


def triton_key():
    """Returns Triton's `triton_key`: the hash of its own sources and of its 500-MB
    libtriton, part of every kernel's cache key, computed at a process's first compile or
    cache lookup (0.5 s on 2 cores, with 40 modules imported). Called once in the zygote,
    its cached value is every worker's at the fork; each worker's probe paid it before
    (RESULTS.md §38). Triton 3.4 keeps it in `triton.compiler.compiler`."""
    import triton.compiler.compiler
    import triton.runtime.cache

    return getattr(triton.runtime.cache, "triton_key", None) or triton.compiler.compiler.triton_key


def _end_others(scope: str, child: int | None) -> None:
    """Ends every process the last child left (`scope`, see the module docstring)."""
    if scope == "namespace":
        try:
            os.kill(-1, signal.SIGKILL)  # all but init and this process, in this namespace
        except ProcessLookupError:
            pass
    elif child is not None:
        try:
            os.killpg(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    while True:  # reap them
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break


def _empty(directory: str) -> None:
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _child(control: socket.socket, fds: list[int]) -> None:
    """Runs in the forked child: one candidate's worker, then exit."""
    from fitness.sandbox import worker

    control.close()
    os.setpgid(0, 0)
    faulthandler.enable(file=sys.stderr, all_threads=False)
    channel = socket.socket(fileno=fds[2]) if len(fds) > 2 else None
    try:
        worker._serve(fds[0], fds[1], channel)
    finally:
        os._exit(0)


def _undumpable() -> None:
    """Makes this process non-dumpable: a child (same uid) can then neither ptrace it nor
    read or write its memory through /proc, so it cannot change what the next child is
    forked from. It can still signal it, which only ends the slot (the engine starts a new
    one)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    scope = sys.argv[2]
    _preload()
    _undumpable()
    workdir, child, generation = os.getcwd(), None, None
    while True:
        readable, _, _ = select.select([control], [], [], 0.05)
        if child is not None:
            try:
                pid, status = os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pid, status = child, 0
            if pid == child:
                control.send(f"exit {generation} {os.waitstatus_to_exitcode(status)}".encode())
                child = None
        if not readable:
            continue
        message, fds, _, _ = socket.recv_fds(control, 64, 4)
        if not message:
            return  # the engine closed CONTROL: the slot is being shut down
        _end_others(scope, child)
        _empty(workdir)
        generation, child = message.decode().split()[1], os.fork()
        if child == 0:
            _child(control, fds)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()
