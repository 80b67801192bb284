"""The Evaluator: worker pools + the cascade + the baseline-timing cache, for one device.

A plain, thread-safe object (the FitnessActor and `evo eval` both drive it from threads):
`evaluate(task, candidate)` returns an Evaluation and never raises for anything a
candidate does. If the device stops answering (new workers cannot even start and probe
it, the device lock is held past every limit, or a killed process does not exit: its
kernel does not stop), the Evaluator says so in one line on stderr, every later evaluation
returns at once with `harness_error`, and `stats()` says so: the device is out.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
import shutil
import sys
import tempfile
import threading
import time

from evo.records import Candidate, Evaluation, Task
from fitness import harness_version
from fitness.processes import jail
from fitness.device import DeviceInfo, detect
from fitness.processes import watchdog
from fitness.processes.device_lock import DeviceHeld, DeviceLock
from fitness.judge import clock
from fitness.judge.activity import Activity
from fitness.judge.cascade import BASELINE_JOBS, Cascade
from fitness.processes.pool import GRACE_S, DeviceUnresponsive, SandboxSettings, WorkerPool
from fitness.settings import Settings

_SHM_DIR = "/dev/shm"
_SHM_MIN_FREE_BYTES = 8 << 30


def _scratch_root() -> str:
    """Returns a fresh directory for workers and exchanged outputs: in RAM when it has room.

    Outputs of GPU-sized cases are hundreds of MB per call; /dev/shm makes handing them to
    the checker a memory copy instead of a disk write.
    """
    in_ram = os.path.isdir(_SHM_DIR) and shutil.disk_usage(_SHM_DIR).free > _SHM_MIN_FREE_BYTES
    return tempfile.mkdtemp(prefix="kernelevo-fitness-", dir=_SHM_DIR if in_ram else None)


class Evaluator:
    """Scores candidates on one device as `Settings` say (`Evaluator(Settings(...))`; a
    DeviceInfo as `device` skips detection).

    With sandbox "bwrap" and no working bubblewrap, construction raises
    `jail.SandboxUnavailable` instead of scoring untrusted code. Each built-in task's walk
    leases one sandboxed candidate worker and one trusted checker (it makes the inputs, runs
    the reference and compares outputs), so there are as many checkers as workers, and
    `BASELINE_JOBS` more for the baselines' warm-up and timing.
    """

    def __init__(self, settings: Settings | None = None, device: DeviceInfo | None = None):
        self.settings = settings = settings or Settings()
        self.device = device or detect(settings.device)
        limits = settings.timeouts
        if settings.sandboxed:
            jail.verify(self.device.backend)
        sandbox = SandboxSettings(settings.sandboxed, settings.sandbox_limits)
        self._root = _scratch_root()
        spares = settings.spares
        if spares is None:
            spares = max(1, settings.workers // 2)
        longest_s = max(dataclasses.astuple(limits)) + GRACE_S + watchdog.GRACE_S
        # a hold ends within the longest limit; every walk and baseline job may hold in turn
        self.gate = DeviceLock(exclusive_timing=self.device.timing_meaningful,
                               wait_limit_s=(settings.workers + BASELINE_JOBS + 1) * longest_s)
        # workers end and start as device work: none while a case is timed (`clock.QUIET`)
        pools = functools.partial(WorkerPool, self.device, root_dir=self._root, sandbox=sandbox,
                                  ready_timeout_s=limits.ready_s,
                                  device_work=self.gate.shared if clock.QUIET != "off"
                                  else contextlib.nullcontext)
        # one worker per candidate: a worker serves one walk and is ended, a spare started
        # ahead takes the next, so nothing of one candidate reaches another's evaluation
        self._candidates = pools(size=settings.workers, role="candidate", spares=spares,
                                 max_uses=1)
        self._baselines = pools(size=BASELINE_JOBS, role="candidate", max_uses=1)
        self._checkers = pools(size=settings.workers + BASELINE_JOBS, role="checker")
        self._cascade = Cascade(self.device, self._candidates, self._checkers, self.gate,
                                limits, settings.static_gate,
                                baselines=self._baselines, give_up=not settings.time_every_case)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._evaluated = 0
        self._failures: collections.Counter[str] = collections.Counter()
        self._gpu_s = 0.0
        self._unresponsive = ""
        self._under_way: dict[int, Activity] = {}  # id -> what each evaluation is doing

    def evaluate(self, task: Task, candidate: Candidate) -> Evaluation:
        """Returns the candidate's Evaluation on this device."""
        self._check_stuck()
        if self._unresponsive:
            return self._device_down(task, candidate)
        activity = Activity(task.name, candidate.id)
        with self._lock:
            self._under_way[id(activity)] = activity
        try:
            evaluation = self._cascade.evaluate(task, candidate, activity)
        except (DeviceUnresponsive, DeviceHeld) as error:
            self._take_out(str(error))
            return self._device_down(task, candidate)
        finally:
            with self._lock:
                del self._under_way[id(activity)]
        self._check_stuck()
        if not self.settings.sandboxed:
            evaluation = dataclasses.replace(evaluation, sandboxed=False)
        with self._lock:
            self._evaluated += 1
            self._failures[evaluation.failure_kind or "none"] += 1
            self._gpu_s += evaluation.compile_s + evaluation.check_s + evaluation.bench_s
        return evaluation

    def _check_stuck(self) -> None:
        """Takes the device out once a killed process of its pools has outlived its SIGKILL."""
        stuck = self._candidates.stuck + self._baselines.stuck + self._checkers.stuck
        if stuck:
            self._take_out(stuck[0])

    def _take_out(self, cause: str) -> None:
        """Stops using the device: every later evaluation is a quick harness_error, and one
        line on stderr says why."""
        with self._lock:
            first, self._unresponsive = not self._unresponsive, self._unresponsive or cause
        if first:
            print(f"kernelevo: device {self.device.name} is out of this campaign: {cause}",
                  file=sys.stderr, flush=True)

    @property
    def device_error(self) -> str:
        """Why the device is out of this Evaluator's use ("" while it is in)."""
        with self._lock:
            return self._unresponsive

    def _device_down(self, task: Task, candidate: Candidate) -> Evaluation:
        return Evaluation(candidate_id=candidate.id, stage_reached="syntax", call_ok=False,
                          correct=False, failure_kind="harness_error",
                          error_trace=f"device {self.device.name} stopped answering: "
                                      f"{self._unresponsive}",
                          device=self.device.name, backend=self.device.backend,
                          harness_version=harness_version(task.suite), sandboxed=self.settings.sandboxed)

    def stats(self) -> dict:
        """Returns counters: evaluated, busy_s (device held), kernel_s (device time in timed
        kernels, candidates' and baselines'), timing_wait_s (timing runs waiting for the device),
        drain_wait_s and stragglers (of that wait, the part spent draining shared holders, and
        the runs that went ahead beside one past `straggler_wait_s`),
        walk_wait_s (walks waiting for the device while timing waited or ran), timing_holds
        (the device held for timing: a case, or a baseline's cases together), gpu_s (sum over
        candidates), ready_wait_s and renew_s (leases of candidate workers waiting for one's
        start-up, and putting a fresh one in place at their end), started_s (the start-ups'
        phases in all, "device" and "probe", by the workers' own word, and their count), ..."""
        with self._lock:
            return {"evaluated": self._evaluated, **self.gate.counters(),
                    "gpu_s": self._gpu_s, "uptime_s": time.monotonic() - self._started,
                    "failures": dict(self._failures), "device": self.device.name,
                    "backend": self.device.backend, "device_ok": not self._unresponsive,
                    "device_error": self._unresponsive,
                    "respawns": (self._candidates.respawns + self._baselines.respawns
                                 + self._checkers.respawns),
                    "ready_wait_s": self._candidates.ready_wait_s,
                    "renew_s": self._candidates.renew_s,
                    "started_s": dict(self._candidates.started_s),
                    **self._cascade.meter.snapshot(), "sandboxed": self.settings.sandboxed}

    def timed_cases(self) -> list[dict]:
        """Returns the meter's log of the latest timed cases (`Meter.timed_case`), oldest
        first: for diagnosis, as `stats`."""
        return self._cascade.meter.timed_cases()

    def in_progress(self) -> list[dict]:
        """Returns what each evaluation under way is doing (`Activity.snapshot`: its stage,
        the request it waits on and for how long against that request's limit), longest
        running first: what a campaign shows when an island has waited long on one."""
        now = time.monotonic()
        with self._lock:
            snapshots = [activity.snapshot(now) for activity in self._under_way.values()]
        return sorted(snapshots, key=lambda snapshot: -snapshot["for_s"])

    def close(self) -> None:
        """Kills every worker and removes the temporary directories."""
        self._cascade.close()
        self._candidates.close()
        self._baselines.close()
        self._checkers.close()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
