"""The first code that runs inside a sandbox: limits, uid drop, then the real program.

Started by `fitness.processes.jail.command` as `python -m fitness.sandbox.entry SETTINGS MODULE ARGS...`.
It runs before any untrusted code, so the hard limits it sets cannot be raised again, and
when the engine is root it drops to nobody (no capabilities remain after setuid).
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import sys


def _tasks_of_uid(uid: int) -> int:
    """Returns how many threads the uid runs now (RLIMIT_NPROC counts threads per uid)."""
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count


def _set_limits(limits: dict, backend: str, dedicated_uid: bool) -> None:
    memory = resource.RLIMIT_AS if backend == "interpreter" else resource.RLIMIT_DATA
    processes = limits["processes"]
    if not dedicated_uid:  # the engine's own uid: leave room for what it already runs
        processes += _tasks_of_uid(os.getuid())
    for kind, value in ((memory, limits["memory_bytes"]), (resource.RLIMIT_NPROC, processes),
                        (resource.RLIMIT_FSIZE, limits["file_bytes"]),
                        (resource.RLIMIT_CPU, limits["cpu_s"]), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(kind, (value, value))


def _drop_privileges(uid: int, gid: int, groups: list[int]) -> None:
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit("sandbox: could not drop to the unprivileged uid")


def main() -> None:
    settings = json.loads(sys.argv[1])
    module, args = sys.argv[2], sys.argv[3:]
    drop_to = settings["drop_to"]
    _set_limits(settings["limits"], settings["backend"], dedicated_uid=drop_to is not None)
    if drop_to is not None:
        _drop_privileges(*drop_to)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
