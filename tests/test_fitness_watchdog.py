"""The judge's watchdog ends a request's process tree at its limit plus the grace whatever the
worker does and whoever waits on it, never waits for the exit, and frees the device lock
with the holder (real sandboxed interpreter workers, no GPU)."""

import pathlib
import sys
import threading
import time

import pytest

from fitness.device import DeviceInfo
from fitness.processes import watchdog
from fitness.processes.device_lock import DeviceLock
from fitness.processes.pool import WorkerFault, WorkerPool, _tree

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments" / "perf"))

INTERPRETER = DeviceInfo("interpreter", "cpu-interpreter")
LIMIT_S = 1.5
SLACK_S = 3.0
"""What a loaded 2-core machine may add to a kill's round trip."""

STOPS_ITSELF = "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n"
IGNORES_SIGTERM = ("import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                   "if os.fork() == 0:\n    os.setsid()\n    time.sleep(3600)\n"
                   "os.kill(os.getpid(), signal.SIGSTOP)\n")


@pytest.fixture
def pool(tmp_path):
    made = WorkerPool(INTERPRETER, 1, "candidate", str(tmp_path))
    yield made
    made.close()


def _load(source: str) -> dict:
    return {"op": "load", "source": source, "entry_point": "f", "arity": 0, "stall_s": 600.0}


def _gone(pids: list[int], within_s: float) -> float | None:
    """Returns the seconds until every process of `pids` was gone (or a zombie), else None."""
    start = time.monotonic()
    while time.monotonic() - start < within_s:
        if all(_dead(pid) for pid in pids):
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.parametrize("source", [STOPS_ITSELF, IGNORES_SIGTERM],
                         ids=["stops_itself", "ignores_sigterm_and_forks"])
def test_a_request_nobody_waits_on_is_ended_at_its_limit_plus_grace(pool, source):
    with pool.lease() as worker:
        deadline = worker.start(_load(source), LIMIT_S)
        time.sleep(0.5)
        tree = _tree(worker.proc.pid)
        assert len(tree) >= 3  # bubblewrap, the fork server and the candidate (and its child)
        gone_s = _gone(tree, LIMIT_S + watchdog.GRACE_S + SLACK_S)
        assert gone_s is not None, f"still alive: {[pid for pid in tree if not _dead(pid)]}"
        assert gone_s + 0.5 >= LIMIT_S + watchdog.GRACE_S - 0.2  # the watchdog, not earlier
        with pytest.raises(WorkerFault) as fault:
            worker.finish({"op": "load"}, deadline, LIMIT_S)
        assert fault.value.kind == "timeout"
        assert "ended by the watchdog" in fault.value.detail


def test_a_walk_waiting_on_its_request_ends_it_at_the_limit_and_never_waits_for_the_exit(pool):
    with pool.lease() as worker:
        start = time.monotonic()
        with pytest.raises(WorkerFault) as fault:
            worker.request(_load(STOPS_ITSELF), LIMIT_S)
        assert fault.value.kind == "timeout"
        assert LIMIT_S <= time.monotonic() - start < LIMIT_S + SLACK_S


def test_time_the_judge_holds_a_worker_stopped_counts_in_none_of_its_limits(pool):
    """The judge stops other workers while it times one (`WorkerPool.frozen`): a request
    held stopped past its limit plus the grace must still end normally, neither the waiting
    thread nor the watchdog counting the stopped seconds."""
    source = "import time\ntime.sleep(1.0)\n\ndef f():\n    return 0\n"
    outcome = {}

    def run(worker) -> None:
        try:
            outcome["reply"] = worker.request(_load(source), LIMIT_S)
        except WorkerFault as fault:
            outcome["fault"] = f"{fault.kind}: {fault.detail}"

    with pool.lease() as worker:
        waiter = threading.Thread(target=run, args=(worker,))
        waiter.start()
        time.sleep(0.3)
        with pool.frozen():
            time.sleep(LIMIT_S + watchdog.GRACE_S + 1.0)
        waiter.join(30)
    assert "fault" not in outcome, outcome["fault"]
    assert outcome["reply"].get("ok"), outcome["reply"]


CONTINUES_ITS_SIBLING = ("import os, signal\n"
                         "if os.fork() == 0:\n    while True:\n"
                         "        for pid in [int(name) for name in os.listdir('/proc') if name.isdigit()]:\n"
                         "            try:\n                os.kill(pid, signal.SIGCONT)\n"
                         "            except OSError:\n                pass\n"
                         "if os.fork() == 0:\n    while True:\n        pass\n"
                         "def f():\n    return 0\n")


def test_a_frozen_tree_stays_stopped_though_one_process_keeps_continuing_another(pool):
    """What the judge reads inside a freeze (CPU time, outputs) must be what the tree left:
    a process not yet stopped when the judge stops its sibling could continue it, and that
    sibling would then run (write outputs, work uncounted) while the judge reads."""
    from fitness.processes.pool import _stopped

    with pool.lease() as worker:
        assert worker.request(_load(CONTINUES_ITS_SIBLING), 30).get("ok")
        time.sleep(0.2)
        with worker.frozen():
            for _ in range(20):
                running = [pid for pid in _tree(worker.proc.pid) if not _stopped(pid)]
                assert not running, f"running inside the freeze: {running}"
                time.sleep(0.01)


def test_the_device_lock_is_free_once_its_holder_is_ended(pool):
    gate = DeviceLock(exclusive_timing=True)
    held = threading.Event()
    outcome = {}

    def hold() -> None:
        with pool.lease() as worker, gate.shared():
            held.set()
            try:
                worker.request(_load(STOPS_ITSELF), LIMIT_S)
            except WorkerFault as fault:
                outcome["kind"] = fault.kind

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(60)
    start = time.monotonic()
    with gate.exclusive(alone=True):  # waits for every shared holder to the end
        waited_s = time.monotonic() - start
    holder.join(timeout=30)
    assert outcome == {"kind": "timeout"}
    assert LIMIT_S - 0.5 < waited_s < LIMIT_S + SLACK_S


SPINS = "import time\nwhile True:\n    time.time()\n"


def test_a_timing_that_goes_ahead_beside_a_straggler_holds_its_worker_stopped(pool):
    """A shared holder still in past the straggler wait (a first call autotuning, a host
    loop until its limit) is named by its process to the timing hold, which stops it for the
    hold (`pool.stopped`): it launches nothing beside the timed runs, and the seconds held
    count in none of its limits. A holder that left in time is not named."""
    from fitness.processes.pool import _stopped, stopped

    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=0.2)
    held = threading.Event()
    outcome = {}

    def straggle(worker) -> None:
        with gate.shared(process=worker):
            held.set()
            try:
                worker.request(_load(SPINS), LIMIT_S)
            except WorkerFault as fault:
                outcome["kind"] = fault.kind

    def short() -> None:
        with gate.shared(process="a short holder's"):
            time.sleep(0.05)

    with pool.lease() as worker:
        straggler = threading.Thread(target=straggle, args=(worker,))
        straggler.start()
        assert held.wait(60)
        threading.Thread(target=short).start()
        time.sleep(0.02)
        with gate.exclusive() as beside, stopped(beside):
            assert beside == [worker]
            for _ in range(10):
                assert all(_stopped(pid) for pid in _tree(worker.proc.pid))
                time.sleep(0.1)
            time.sleep(LIMIT_S)
        assert not any(_stopped(pid) for pid in _tree(worker.proc.pid))
        straggler.join(timeout=30)
    assert outcome == {"kind": "timeout"}
    assert gate.counters()["stragglers"] == 1


def test_a_lock_wait_past_its_bound_says_the_device_is_held():
    from fitness.processes.device_lock import DeviceHeld

    gate = DeviceLock(exclusive_timing=True, wait_limit_s=0.5)
    with gate.exclusive():
        failed = []
        waiter = threading.Thread(target=lambda: _try_shared(gate, failed))
        waiter.start()
        waiter.join(timeout=10)
    assert failed and isinstance(failed[0], DeviceHeld)


def _try_shared(gate: DeviceLock, failed: list) -> None:
    try:
        with gate.shared():
            pass
    except Exception as error:  # noqa: BLE001 - the test reads which
        failed.append(error)


def test_a_killed_process_that_outlives_its_sigkill_takes_the_device_out_in_one_line(
        monkeypatch, capsys):
    """`STUCK_S` 0: the spinning candidate's worker, killed at its limit, has not exited the
    instant the reaper first looks, as a GPU process whose kernel does not stop never does."""
    import spinning_kernel
    from benchmarks.registry import builtin
    from evo.records import make_candidate
    from fitness import Evaluator, Limits, Settings

    task = builtin().get("vector_add")
    monkeypatch.setattr(watchdog, "STUCK_S", 0.0)
    with Evaluator(Settings(device="interpreter", workers=1, spares=0,
                            timeouts=Limits.uniform(LIMIT_S))) as evaluator:
        spinning = evaluator.evaluate(task, make_candidate("vector_add", spinning_kernel.SPINNING_SOURCE))
        assert spinning.failure_kind == "timeout", spinning.error_trace
        time.sleep(0.5)  # the reaper's first look
        start = time.monotonic()
        after = [evaluator.evaluate(task, make_candidate(
            "vector_add", source)) for source in spinning_kernel.ordinary_sources(task, 2)]
        assert time.monotonic() - start < 1.0  # none was walked
        assert [a.failure_kind for a in after] == ["harness_error"] * 2
        assert "have not exited 0 s after their SIGKILL" in after[0].error_trace
        assert not evaluator.stats()["device_ok"]
    lines = [line for line in capsys.readouterr().err.splitlines() if "out of this campaign" in line]
    assert len(lines) == 1 and "cpu-interpreter" in lines[0]
