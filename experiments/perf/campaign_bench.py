"""A whole campaign as a benchmark: throughput, GPU busy fraction and scaling over GPUs.

What it answers (issues 8 and 12): inside a real campaign (Ray islands, FitnessActors,
Parquet rows), how many candidates per minute are scored, what fraction of the wall time
each GPU holds its lock and spends in timed kernels (candidates' and baselines'), how the throughput scales from one GPU to several, and what the engine
itself costs per candidate.

`--mode llm` puts a scripted OpenAI-compatible server on loopback in front of the real
client, answering every request after `--latency-s` seconds (5 s: a slow hosted model) with
a launch-config variant of the task's baseline, so the LLM path's waiting is real while the
kernels stay valid. `--mode offline` uses the offline operators.

    python experiments/perf/campaign_bench.py --mode llm --latency-s 5 --gpus 1 \
        --tasks all --generations 3 --islands 2 --offspring 6 --out /tmp/bench
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402

from benchmarks import registry  # noqa: E402
from evo import campaign, config as config_lib  # noqa: E402
from evo.records import make_candidate  # noqa: E402
from fitness import Settings  # noqa: E402
from fitness import actor as fitness_actor  # noqa: E402
from operators import offline  # noqa: E402

from machine_use import GpuSampler, HostCpu  # noqa: E402  (beside this script)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from scripted_server import Reply, ScriptedServer  # noqa: E402  (a test double, in tests/)


class VariantAnswers:
    """Answers each chat request with a fresh launch-config variant of its task's baseline.

    The task is recognised by its entry point's call signature in the prompt
    ("`softmax(x)"); variants come from the offline mutation operator with a seeded RNG.
    """

    def __init__(self, tasks, backend: str, seed: int = 0):
        self.tasks = {task.entry_point: task for task in tasks}
        self.backend = backend
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.pattern = re.compile(r"`(" + "|".join(map(re.escape, self.tasks)) + r")\(")

    def __call__(self, request: dict) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        found = self.pattern.search(prompt)
        if not found:
            return Reply("I cannot tell which task this is.")
        task = self.tasks[found.group(1)]
        with self.lock:
            parent = make_candidate(task.name, task.baseline_source)
            child = offline.mutate(task, parent, self.rng, self.backend)
        return Reply(f"Strategy: retune the launch configuration.\n\n```python\n"
                     f"{child.source}\n```\n")


def build_config(args, base_url: str | None) -> config_lib.Config:
    tasks = ([t.name for t in registry.builtin().tasks()] if args.tasks == "all"
             else args.tasks.split(","))
    operators = {"mode": args.mode}
    if args.mode == "llm":
        operators.update(base_url=base_url, model="scripted", api_key_env="KERNELEVO_BENCH_KEY",
                         max_concurrent_requests=args.offspring)
    return config_lib.from_dict({
        "campaign": {"name": f"bench-{args.mode}-{args.gpus}gpu", "tasks": tasks,
                     "seed": args.seed, "seed_with_baseline": True},
        "search": {"generations": args.generations, "population": args.population,
                   "offspring": args.offspring, "islands": args.islands,
                   "migration_interval": 0},
        "operators": operators,
        "fitness": {"device": args.device, "workers": args.workers,
                    "max_in_flight_per_actor": args.in_flight},
    })


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("offline", "llm"), default="offline")
    parser.add_argument("--latency-s", type=float, default=5.0)
    parser.add_argument("--gpus", type=int, default=1, help="FitnessActors (one per GPU)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--population", type=int, default=4)
    parser.add_argument("--offspring", type=int, default=6)
    parser.add_argument("--islands", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    os.environ["KERNELEVO_BENCH_KEY"] = "not-a-real-key"

    ray.init(include_dashboard=False, log_to_driver=False,
             num_gpus=None if args.device != "interpreter" else 0)
    gpus_seen = int(ray.cluster_resources().get("GPU", 0))
    actors = fitness_actor.start_actors(Settings(device=args.device, workers=args.workers),
                                        max_gpus=args.gpus)
    device = ray.get(actors[0].device.remote(), timeout=300)
    started_stats = ray.get([a.stats.remote() for a in actors], timeout=300)
    answers = VariantAnswers(registry.builtin().tasks(), device.backend, args.seed)
    with (ScriptedServer(answers, latency_s=args.latency_s) if args.mode == "llm"
          else contextlib.nullcontext()) as server:
        config = build_config(args, server.base_url if server else None)
        started = time.monotonic()
        with GpuSampler() as gpus, HostCpu() as cpu:
            summary = campaign.run_campaign(config, Path(args.out), fitness_actors=actors)
        wall_s = time.monotonic() - started
    stats = ray.get([a.stats.remote() for a in actors], timeout=300)
    evaluated = sum(s["evaluated"] - s0["evaluated"] for s, s0 in zip(stats, started_stats))
    busy = [(s["busy_s"] - s0["busy_s"]) / wall_s for s, s0 in zip(stats, started_stats)]
    kernel_busy = [(s["kernel_s"] - s0["kernel_s"]) / wall_s for s, s0 in zip(stats, started_stats)]
    waited = [(s["timing_wait_s"] - s0["timing_wait_s"]) / wall_s for s, s0 in zip(stats, started_stats)]
    failures: dict[str, int] = {}
    for s, s0 in zip(stats, started_stats):
        for kind, count in s["failures"].items():
            failures[kind] = failures.get(kind, 0) + count - s0["failures"].get(kind, 0)
    result = {
        "device": device.name, "gpus_in_cluster": gpus_seen, "fitness_actors": len(actors),
        "mode": args.mode, "latency_s": args.latency_s if server else 0.0,
        "tasks": len(config.campaign.tasks), "generations": args.generations,
        "islands": args.islands, "offspring": args.offspring, "wall_s": wall_s,
        "candidates": summary.candidates, "evaluated_by_fitness": evaluated,
        "candidates_per_min": 60.0 * evaluated / wall_s,
        "gpu_lock_held_fraction": busy,
        "gpu_kernel_fraction": kernel_busy,
        "timing_wait_fraction": waited,
        "failures": {kind: count for kind, count in sorted(failures.items()) if count},
        "retries": sum(s["retries"] - s0["retries"] for s, s0 in zip(stats, started_stats)),
        "peak_gpu_memory_mib": gpus.peak_mib,
        "gpu_utilization_samples": gpus.utilization,
        "host_cpu_busy_samples": cpu.busy_shares,
        "engine_overhead_ms_per_candidate": summary.engine_overhead_ms_per_candidate,
        "llm_requests": len(server.requests) if server else 0,
        "best_speedup": {name: r.best_speedup for name, r in summary.tasks.items()},
    }
    print(summary.text())
    print("| device | actors | mode | LLM latency s | candidates | wall s | candidates/min | "
          "lock held | kernel time | engine ms/cand |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {device.name} | {len(actors)} | {args.mode} | {result['latency_s']:.0f} | "
          f"{evaluated} | {wall_s:.1f} | {result['candidates_per_min']:.0f} | "
          f"{', '.join(f'{100 * b:.0f}%' for b in busy)} | "
          f"{', '.join(f'{100 * b:.1f}%' for b in kernel_busy)} | "
          f"{summary.engine_overhead_ms_per_candidate:.1f} |")
    print(f"timing runs waiting for their GPU: {', '.join(f'{100 * w:.0f}%' for w in waited)} "
          f"of the wall time; failures by kind: {result['failures']}; walks retried: "
          f"{result['retries']}")
    print(f"peak device memory used (nvidia-smi, twice a second): {gpus.memory_text()}")
    print(f"device utilisation (nvidia-smi: a kernel of any process running): "
          f"{gpus.utilization_text()}; host cores busy: {cpu.text()}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    for handle in actors:
        ray.get(handle.shutdown.remote(), timeout=120)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
