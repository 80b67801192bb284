"""Where a fresh worker's start-up goes: one worker per candidate starts from the zygote
(`fitness.sandbox.zygote`: torch and triton imported, no device touched), then makes its
device context and runs the device probe under the op recorder (`Worker.__init__`). On an
H200 that took 1.1 s for the context and 1.4 s for the probe a start, and fitness_bench's
leases waited on it (RESULTS.md §35).

This script preloads as the zygote does, then forks `--starts` children one after another;
each times the start's steps and counts the modules each step imported (those could be
imported before the fork, where every worker shares them). Each child starts with an empty
Triton cache of its own, as a worker does (the zygote empties its directory): first as
before, then with what a first worker built put back (`zygote._built_by_a_first_worker`):

    python experiments/perf/worker_start.py --device cuda --starts 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time


def _step(label: str, body) -> None:
    known = set(sys.modules)
    began = time.perf_counter()
    body()
    spent = time.perf_counter() - began
    fresh = sorted(set(sys.modules) - known)
    roots = sorted({name.split(".")[0] for name in fresh})
    print(f"  {label:<34} {spent * 1e3:8.1f} ms  {len(fresh):4d} modules imported "
          f"{' '.join(roots)[:160]}", flush=True)
    if fresh:
        print(f"    {' '.join(fresh)[:1200]}", flush=True)


def _start(device: str) -> None:
    """A worker's start-up, step by step (`Worker.__init__`)."""
    import torch
    import triton

    from fitness.measure.launches import LaunchCounter
    from fitness.sandbox import instrument, probe

    launches = LaunchCounter()
    launches.install()
    _step("device context (torch.empty)", lambda: torch.empty(1, device=device))
    out = {}
    recorder = instrument.OpRecorder(launches)
    _step("op recorder entered", recorder.__enter__)
    _step("torch.zeros on the device", lambda: out.setdefault("zeros", torch.zeros(100, device=device)))
    _step("first Triton launch (probe kernel)", lambda: probe._fill_kernel[(triton.cdiv(100, 64),)](
        out["zeros"], 2.0, 100, BLOCK_SIZE=64))
    _step("sum().item()", lambda: float(out["zeros"].sum().item()))
    recorder.__exit__(None, None, None)
    _step("the probe again (all warm)", lambda: probe.run(device))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda or cpu (the interpreter)")
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args()
    from fitness.sandbox import zygote

    cache = os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="worker-start-cache-")
    backend = "interpreter" if args.device == "cpu" else "cuda"
    began = time.perf_counter()
    zygote._preload(backend)
    print(f"zygote preload {time.perf_counter() - began:.2f} s", flush=True)
    for label, first_worker in (("an empty cache", False), ("what a first worker built", True)):
        built = {}
        if first_worker:
            shutil.rmtree(cache, ignore_errors=True)  # the last start's builds are not its
            began = time.perf_counter()
            built = zygote._built_by_a_first_worker({"backend": backend, "name": args.device}, cache)
            print(f"\na first worker built {len(built)} files in {time.perf_counter() - began:.2f} s: "
                  f"{' '.join(sorted(path.split('/')[-1] for path in built))[:400]}", flush=True)
        for start in range(args.starts):
            shutil.rmtree(cache, ignore_errors=True)
            zygote._restore(cache, built)
            pid = os.fork()
            if pid == 0:
                began = time.perf_counter()
                print(f"start {start} from {label}:", flush=True)
                _start(args.device)
                print(f"  whole start {time.perf_counter() - began:.2f} s", flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
