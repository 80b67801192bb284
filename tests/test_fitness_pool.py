"""The worker pool's lending: how many walks at once, and which worker a lease gets after a
candidate killed one (real interpreter workers, no GPU)."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest
import triton
import triton.language as tl

from fitness.device import DeviceInfo
from fitness.processes import watchdog
from fitness.processes.device_lock import DeviceLock
from fitness.processes.pool import WorkerFault, WorkerPool, _stopped, _tree, quiet

INTERPRETER = DeviceInfo("interpreter", "cpu-interpreter")


@pytest.fixture
def pool_factory(tmp_path):
    pools = []

    def make(size: int, spares: int = 0, **options) -> WorkerPool:
        pools.append(WorkerPool(INTERPRETER, size, "candidate", str(tmp_path), spares=spares,
                                **options))
        return pools[-1]

    yield make
    for pool in pools:
        pool.close()


def test_a_lease_takes_a_ready_worker_before_a_replacement_still_starting(pool_factory):
    pool = pool_factory(2)
    with pool.lease() as crashed, pool.lease() as kept:
        crashed.kill()  # as a candidate's illegal memory access leaves its process
    # idle now: the replacement (just started, importing torch), then the kept worker
    with pool.lease() as next_one:
        assert next_one is kept
    assert pool.respawns == 1


@pytest.mark.slow
def test_spares_start_beside_the_lent_workers_but_lend_no_more_at_once(pool_factory):
    pool = pool_factory(1, spares=1)
    started = set(pool._all)
    held, second_lent, release = threading.Event(), threading.Event(), threading.Event()
    lent = []

    def first():
        with pool.lease() as worker:
            held.set()
            release.wait(60)
            worker.kill()  # the crash that the spare is there for

    def second():
        with pool.lease() as worker:
            lent.append(worker)
            second_lent.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert held.wait(60)
    threads[1].start()
    assert not second_lent.wait(1.0)  # size 1: the spare is not lent beside the first
    release.set()
    assert second_lent.wait(60)
    for thread in threads:
        thread.join(60)
    assert lent[0] in started and lent[0].alive  # the spare, not the crashed one's replacement
    assert pool.respawns == 1


def test_a_tree_reaping_its_children_cannot_lower_its_cpu_reading():
    """Reaping exited children moves their exact run time into the parent's tick counts,
    rounded down (measured: -7 and -10.1 ms over 4 children reaped by one process, past its
    one tick): `CpuReading.since` charges each reap a tick, so the reading never falls below
    zero."""
    import time

    from fitness.processes.pool import cpu_reading

    for burn_s in (0.0155, 0.0175, 0.0195):
        children = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                started = time.process_time()
                while time.process_time() - started < burn_s:
                    pass
                os._exit(0)
            children.append(pid)
        time.sleep(0.3)  # every child has exited: zombies of this process
        before = cpu_reading(os.getpid())
        for pid in children:
            os.waitpid(pid, 0)
        assert cpu_reading(os.getpid()).since(before) >= 0.0


def test_a_thread_that_ends_keeps_its_exact_time_in_the_reading():
    """A thread's run time stays in its process's reading once it ends, exactly (the process
    CPU clock): ending threads neither lowers a candidate's reading nor charges honest code
    that ends one inside a batch the 10 ms that tick counts would round by. The process is a
    child of its own: this one's other threads would run inside the reading."""
    import subprocess
    import sys

    from fitness.processes.pool import cpu_reading

    child = subprocess.Popen([sys.executable, "-c", _BURNS_IN_A_THREAD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        for burn_s in (0.004, 0.0155, 0.025):
            before = cpu_reading(child.pid)
            child.stdin.write(f"{burn_s}\n")
            child.stdin.flush()
            burned = float(child.stdout.readline())
            used = cpu_reading(child.pid).since(before)
            assert burned <= used <= burned + 0.005, (burn_s, burned, used)
    finally:
        child.kill()
        child.wait(10)


_BURNS_IN_A_THREAD = """
import sys, threading, time
def burn(seconds, burned):
    while time.thread_time() < seconds:
        pass
    burned.append(time.thread_time())
print("ready", flush=True)
for line in sys.stdin:
    burned = []
    thread = threading.Thread(target=burn, args=(float(line), burned))
    thread.start()
    thread.join()
    print(burned[0], flush=True)
"""


class _RecordingFault:
    """Timing calls whose recording raises `error` in the checker (pickled there by
    reference: this module is on the checker's path)."""

    def __init__(self, error: str):
        self.error = error

    def record(self, device, count):
        raise RuntimeError(self.error)


@pytest.mark.parametrize("error, replaced", [
    ("CUDA error: an illegal memory access was encountered", True),  # torch's words for it
    ("the timing code passed no tensor", False),
])
def test_a_checker_ends_after_a_fault_that_poisons_its_device_context(tmp_path, error, replaced):
    # a pooled checker that went on after an illegal memory access failed every later task
    # it served the same way (RESULTS.md §30)
    pool = WorkerPool(INTERPRETER, 1, "checker", str(tmp_path))
    try:
        with pool.lease() as checker:
            first = checker.proc.pid
            reply = checker.request({"op": "record", "calls": _RecordingFault(error), "count": 1}, 60)
        assert (reply["ok"], reply["kind"], bool(reply.get("fatal"))) == (False, "harness_error", replaced)
        assert error in reply["trace"]
        with pool.lease() as checker:
            assert (checker.proc.pid != first) == replaced
            assert checker.request({"op": "timed_close", "token": "none"}, 60)["ok"]
    finally:
        pool.close()


class _SlowRecording:
    """Timing calls whose recording outlasts its request's limit."""

    def record(self, device, count):
        time.sleep(60)


def test_a_request_to_a_checker_a_timeout_killed_is_a_fault_that_says_so(tmp_path):
    # a baseline's timing closed its case on the checker that its release's timeout had
    # killed: select() on the closed pipe raised ValueError, out of the Evaluator (RESULTS.md §40)
    pool = WorkerPool(INTERPRETER, 1, "checker", str(tmp_path))
    try:
        with pool.lease() as checker:
            with pytest.raises(WorkerFault, match="past its 2 s limit"):
                checker.request({"op": "record", "calls": _SlowRecording(), "count": 1}, 2)
            with pytest.raises(WorkerFault, match="ended by an earlier fault .* timed_close"):
                checker.request({"op": "timed_close", "token": "none"}, 60)
    finally:
        pool.close()


@triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=1),
                         triton.Config({"BLOCK": 32}, num_warps=4),
                         triton.Config({"BLOCK": 64}, num_warps=2)], key=["n"])
@triton.jit
def _tuned_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


class _TunedReference:
    """A reference whose kernel is autotuned, run in the checker (pickled there by reference);
    says which blocks its launches used."""

    def record(self, device, count):
        import torch

        x = torch.arange(100, dtype=torch.float32, device=device)
        out, blocks = torch.empty_like(x), []
        _tuned_copy[lambda meta: (blocks.append(meta["BLOCK"]) or triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
        return {"blocks": blocks, "copied": bool(torch.equal(x, out))}


def test_a_checker_runs_an_autotuned_reference_on_one_config_benchmarking_none(tmp_path):
    # an external reference tuned every shape in every checker, its benchmarks on the device
    # beside other walks' timed runs (RESULTS.md §40)
    pool = WorkerPool(INTERPRETER, 1, "checker", str(tmp_path))
    try:
        with pool.lease() as checker:
            reply = checker.request({"op": "record", "calls": _TunedReference(), "count": 1}, 120)
        assert reply["ok"], reply.get("trace")
        assert (reply["blocks"], reply["copied"]) == ([32], True)  # the most warps, launched once
    finally:
        pool.close()


def test_a_zygotes_children_start_with_the_captures_and_the_probes_imports_done():
    """A worker per candidate pays no imports its zygote could: the probe's first launch
    imported Triton's code generator and interpreter (RESULTS.md §35); on a GPU, a capture's
    `Arena` runs a meta `empty_like` (its first in a process imported about 480 modules,
    half a second or more of every timed case's capture on an H200) and the first compile
    hashes Triton itself (`zygote.triton_key`, RESULTS.md §38). The interpreter's workers do
    neither, so its zygote does not either (seconds a zygote on a loaded 2-core machine)."""
    code = (
        "import sys, torch\n"
        "from fitness.sandbox import probe, zygote\n"
        "zygote._preload('interpreter')\n"
        "known = set(sys.modules)\n"
        "probe.run('cpu')\n"
        "print(sorted(set(sys.modules) - known), zygote.triton_key().cache_info().currsize)\n"
        "zygote._preload('cuda')\n"
        "print(len(sys.modules) - len(known) > 100)\n"
        "known = set(sys.modules)\n"
        "torch.ops.aten.empty_like.default(torch.empty(2, device='meta'))\n"
        "print(sorted(set(sys.modules) - known), zygote.triton_key().cache_info().currsize)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    # nothing left to import, and Triton hashed by a compiling backend's zygote only
    assert done.stdout.strip().splitlines()[-3:] == ["[] 0", "True", "[] 1"]


def test_what_a_first_worker_built_is_every_childs_own_copy(tmp_path):
    """The zygote keeps what its first, trusted worker left in Triton's cache and writes it
    anew into each child's emptied directory: a candidate that rewrites its copy (a launcher
    of its own under the probe's key) leaves the next child's as it was built. A first
    worker that fails leaves nothing kept."""
    cache = tmp_path / "triton-cache"
    built = cache / "KEY" / "cuda_utils.so"
    built.parent.mkdir(parents=True)
    built.write_bytes(b"\x7fELF as the trusted worker built it")
    built.chmod(0o755)
    (cache / "KEY" / "__grp__probe.json").write_text("{}")
    code = (
        "import json, os, sys\n"
        "from fitness.sandbox import zygote\n"
        "cache = os.environ['TRITON_CACHE_DIR']\n"
        "kept = zygote._built_by_a_first_worker(json.loads(sys.argv[1]), cache)\n"
        "failed = zygote._built_by_a_first_worker({'backend': 'interpreter', 'unknown': 1}, cache)\n"
        "zygote._empty(cache)\n"
        "zygote._restore(cache, kept)\n"
        "mine = os.path.join(cache, 'KEY', 'cuda_utils.so')\n"
        "first = (open(mine, 'rb').read(), oct(os.stat(mine).st_mode & 0o777))\n"
        "open(mine, 'wb').write(b'a candidate rewrote its copy')\n"
        "zygote._empty(cache)\n"
        "zygote._restore(cache, kept)\n"
        "print(json.dumps([sorted(kept), len(failed), first[0].decode(), first[1],\n"
        "                  open(mine, 'rb').read().decode()]))\n")
    device = {"backend": "interpreter", "name": "cpu-interpreter"}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(device)], capture_output=True,
                          text=True, timeout=180,
                          env={**os.environ, "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr[-2000:]
    kept, failed, first, mode, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert kept == ["KEY/__grp__probe.json", "KEY/cuda_utils.so"] and failed == 0
    assert (first, mode) == ("\x7fELF as the trusted worker built it", "0o755")
    assert after == first  # the candidate's rewrite went with its directory


def test_a_quiet_hold_stops_workers_still_starting_and_waits_for_killed_ones_to_exit(pool_factory):
    """A timing hold's `quiet`: a worker's start-up (its device context, the probe kernel) and
    a killed worker's exit (its context torn down) are device work outside every hold."""
    pool = pool_factory(1, spares=1, max_uses=1)  # both start at once: torch imports for seconds
    starting = pool.starting()
    assert starting, "a worker just started has not answered its start-up"
    with quiet([pool]):
        trees = [_tree(worker.proc.pid) for worker in starting]
        assert all(_stopped(pid) for tree in trees for pid in tree)
        time.sleep(0.3)
    assert not any(_stopped(pid) for tree in trees for pid in tree)  # continued, as before
    with pool.lease() as worker:
        assert pool.started_s["stopped"] >= 0.3  # the start-up's stats say it was held
        lent_tree = _tree(worker.proc.pid)
        first_child = [pid for pid in lent_tree if pid not in worker._server_chain]
        assert first_child
    # the lease's end killed the candidate's process (one worker per candidate)
    with quiet([pool]):
        assert pool.ending() == []
        assert all(watchdog.start_time(pid) is None for pid in first_child)


def test_workers_end_and_start_only_between_timing_holds(pool_factory):
    """The pool's `device_work`: a lease's end (the worker killed, a fresh one forked) waits
    for a timing hold under way, and goes on once it ends."""
    lock = DeviceLock(exclusive_timing=True)
    pool = pool_factory(1, device_work=lock.shared, max_uses=1)
    ended = threading.Event()

    def walk():
        with pool.lease():
            pass
        ended.set()

    with pool.lease():  # its end renews the worker outside any hold
        pass
    generation = next(iter(pool._all)).generation
    with lock.exclusive():
        thread = threading.Thread(target=walk)
        thread.start()
        assert not ended.wait(1.0)
        assert next(iter(pool._all)).generation == generation  # lent, not yet renewed
    assert ended.wait(60)
    thread.join(60)
    assert next(iter(pool._all)).generation == generation + 1
