"""The fork server of one sandbox: a clean worker per candidate without a cold start.

Run in the sandbox as `python -m fitness.sandbox.zygote CONTROL SCOPE DEVICE` (a `DeviceInfo`
as JSON). It imports torch, Triton and the worker and never touches the device (CUDA does not
survive a fork); on a GPU a trusted first worker's builds are kept (`_built_by_a_first_worker`).
For each "fork" message on CONTROL, which carries the new worker's request, reply and (on
CUDA) channel descriptors, it ends every other process of the sandbox, empties its private
directory, puts those builds back, then forks: the child closes CONTROL and serves one
candidate on its own descriptors (`fitness.sandbox.worker._serve`). So nothing a candidate
left behind (processes, threads, files, patched modules, pipes) reaches the next one, and a
child never reads the next one's descriptors. Its exit status goes back on CONTROL as "exit
GENERATION STATUS". SCOPE "namespace": the sandbox has its own PID namespace, and every
process but its init and this one is ended; "group" (`[fitness] sandbox = "off"`): only the
child's process group.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import select
import shutil
import signal
import socket
import sys
import time

FIRST_WORKER_S = 60.0
"""How long the first, trusted worker may take to start before the server forks candidates'
without what it built."""


def _preload(backend: str) -> None:
    """Imports what every worker needs without initialising any device; for a `backend`
    that compiles, also the meta rules a capture's `Arena` runs and Triton's hash. The
    interpreter's workers never capture nor look a kernel up in the cache: there, both
    cost each zygote seconds of a 2-core machine for nothing."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    # what a worker's first launch imports (its probe's), pure Python: RESULTS.md §35
    import triton.compiler.code_generator  # noqa: F401
    import triton.language.semantic  # noqa: F401
    import triton.runtime.interpreter  # noqa: F401

    from fitness.sandbox import instrument, timed, worker  # noqa: F401

    if backend != "interpreter":
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


def _built_by_a_first_worker(device: dict, cache: str) -> dict[str, tuple[bytes, int]]:
    """Starts a worker on `device` in a child, before any candidate's in this sandbox, and
    returns what its start-up left in Triton's cache, `cache` (`_snapshot`): the probe kernel's
    binary, its C launcher and Triton's driver module, built with the host's compilers.
    Every worker's cache starts empty, so each built them again in its probe, on cores the
    other walks were using (RESULTS.md §38). Nothing if it fails or takes past
    `FIRST_WORKER_S`: the workers then build them as before."""
    from fitness.sandbox import worker

    try:
        child = os.fork()
    except OSError:
        return {}
    if child == 0:
        os.setpgid(0, 0)
        status = 1
        try:
            worker.Worker({"device": device}, None)
            status = 0
        finally:
            os._exit(status)
    deadline = time.monotonic() + FIRST_WORKER_S
    while (ended := os.waitpid(child, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    if ended == (0, 0):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child, signal.SIGKILL)
        os.waitpid(child, 0)
        return {}
    if os.waitstatus_to_exitcode(ended[1]) != 0 or not cache:
        return {}
    try:
        return _snapshot(cache)
    except OSError:
        return {}


def _snapshot(directory: str) -> dict[str, tuple[bytes, int]]:
    """Returns every file under `directory`: its path there -> (its bytes, its mode)."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                with open(path, "rb") as handle:
                    files[os.path.relpath(path, directory)] = (handle.read(), os.stat(path).st_mode & 0o777)
    return files


def _restore(directory: str, files: dict[str, tuple[bytes, int]]) -> None:
    """Writes `files` (`_snapshot`'s) under `directory`: new copies, from this process's
    memory, so what a candidate does to its own never reaches the next child's."""
    for relative, (data, mode) in files.items():
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        os.chmod(path, mode)


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
    scope, device = sys.argv[2], json.loads(sys.argv[3])
    _preload(device["backend"])
    _undumpable()
    workdir, child, generation = os.getcwd(), None, None
    cache = os.environ.get("TRITON_CACHE_DIR", "")
    built = {} if device["backend"] == "interpreter" else _built_by_a_first_worker(device, cache)
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
        try:
            _restore(cache, built)
        except OSError:  # a full disk: the child builds them itself, as before
            _empty(workdir)
        generation, child = message.decode().split()[1], os.fork()
        if child == 0:
            _child(control, fds)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()
