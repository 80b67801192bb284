"""How long the HTML page of a large results folder takes to make (issue 33, item 4).

Builds 100,000 synthetic evaluation rows the way the engine writes them (its Parquet schemas,
llm_calls beside them, torch timings): built-in tasks with their real baseline sources, each
row a variant of its parent (its own source and strategy text, three timed cases), parents
chained through the generations with some crossovers, 40% failing with a failure kind, one
LLM call per row. The same rows are written in two layouts:

  by generation: one part per generation (as tests/synthetic_results.py writes);
  engine:        one part per task, island and generation (evo.results, what campaigns write).

For each it times, in this process: the cold page (`html_report.write` from nothing, what
`evo report DIR --html` does) and where its time goes (phases: wall seconds of each step,
timed by wrapping the functions that do it), and the live page after one more part lands
(what `evo view` does: parts read are kept). --repeat N times each layout N times.

    python experiments/perf/html_report_bench.py [--rows 100000] [--offspring 25] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evo import records, results as results_io
from evo.analysis import html_lineage, html_report, lineage, metrics, parts, snapshot

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "builtin" / "kernels"
CASES = ["small", "medium", "large"]
DEVICE = "NVIDIA H100 80GB HBM3"
FAILURES = ["compile_error", "mismatch", "runtime_error", "timeout", "policy_violation",
            "illegal_memory_access"]


def _task_names(count: int) -> list[str]:
    builtin = sorted(p.stem for p in KERNELS.glob("*.py"))
    return [builtin[i % len(builtin)] + ("" if i < len(builtin) else f"_{i // len(builtin)}")
            for i in range(count)]


def build(rows: int, tasks: int, islands: int, offspring: int, seed: int = 0):
    """Returns the campaign's meta, its parts as (generation, task, island, evaluations,
    llm_calls) and its torch timings."""
    rng = np.random.default_rng(seed)
    names = _task_names(tasks)
    generations = max(1, math.ceil(rows / (tasks * islands * offspring)))
    config = {"campaign": {"name": "html-bench", "tasks": names, "seed_with_baseline": True},
              "search": {"generations": generations, "islands": islands, "offspring": offspring,
                         "migration_interval": 5}}
    started = time.time() - 3600.0
    meta = {"config": config, "device": {"backend": "cuda", "name": DEVICE},
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started))}
    written, made, torch_rows = 0, [], []
    for t, task in enumerate(names):
        stem = task if (KERNELS / f"{task}.py").exists() else task.rsplit("_", 1)[0]
        base = KERNELS / f"{stem}.py"
        base_source = base.read_text() if base.exists() else "def kernel():\n    pass\n"
        ref_us = rng.uniform(5, 500, size=len(CASES))
        for c, case in enumerate(CASES):
            torch_rows += [{"task": task, "case": case, "mode": mode, "device": DEVICE,
                            "status": "ok", "median_us": float(ref_us[c] * factor),
                            "floor_us": float(ref_us[c] * 0.3),
                            "copy_floor_us": float(ref_us[c] * 0.3),
                            "bound": "memory", "torch_op": "reference", "torch_version": "2.9",
                            "copy_gbs": 3000.0}
                           for mode, factor in (("eager", 1.3), ("default", 0.9),
                                                ("max-autotune-no-cudagraphs", 0.8))]
        for island in range(islands):
            sources = {records.candidate_id(base_source): base_source}
            for generation in range(1, generations + 1):
                count = min(offspring, rows - written)
                if count <= 0:
                    break
                evaluations, calls, sources = _part(rng, task, t, island, generation, count,
                                                    sources, ref_us)
                made.append((generation, task, island, evaluations, calls))
                written += count
    return meta, made, pa.Table.from_pylist(torch_rows), started


def write(folder: Path, layout: str, meta: dict, made, torch_timings, started: float) -> int:
    """Writes the campaign in `layout` ("engine" or "generation"); returns its part count."""
    for sub in ("evaluations", "llm_calls"):
        (folder / sub).mkdir(parents=True)
    (folder / "campaign.json").write_text(json.dumps(meta))
    pq.write_table(torch_timings, folder / "torch_timings.parquet")
    generations = max(p[0] for p in made)
    groups: dict[tuple, list] = {}
    for generation, task, island, evaluations, calls in made:
        key = (generation, task, island) if layout == "engine" else (generation,)
        groups.setdefault(key, []).append((evaluations, calls))
    for key, tables in groups.items():
        at = started + key[0] * 3600.0 / generations
        for sub, index in (("evaluations", 0), ("llm_calls", 1)):
            path = (results_io.part_path(folder / sub, key[0], key[1:]) if layout == "engine"
                    else folder / sub / f"part-{key[0]:05d}.parquet")
            pq.write_table(pa.concat_tables([t[index] for t in tables]), path)
            _touch(path, at)
    return len(groups)


def _touch(path: Path, at: float) -> None:
    os.utime(path, (at, at))


def _part(rng, task, t, island, generation, count, parent_sources, ref_us):
    """Returns one island's generation: evaluations and llm_calls tables, and the new
    candidates' sources by id (the next generation's parents)."""
    rows, calls, fresh = [], [], {}
    parents = list(parent_sources)
    for slot in range(count):
        parent = parents[rng.integers(len(parents))]
        crossed = rng.random() < 0.1
        parent_ids = [parent] + ([parents[rng.integers(len(parents))]] if crossed else [])
        block, warps = 2 ** int(rng.integers(6, 14)), 2 ** int(rng.integers(0, 4))
        source = parent_sources[parent] + f"TUNED_G{generation}_S{slot} = ({block}, {warps})\n"
        correct = bool(rng.random() < 0.6)
        speedup = (float(np.exp(rng.normal(0.15 * math.log1p(generation), 0.25)))
                   if correct else None)
        latency = [float(r / speedup) for r in ref_us] if correct else [None] * len(CASES)
        cid = f"{t:04x}{island:02x}{generation:06x}{slot:04x}"
        fresh[cid] = source
        tokens = int(rng.integers(2000, 9000))
        rows.append({
            "campaign": "html-bench", "task": task, "suite": "builtin", "difficulty": 1 + t % 5,
            "island": island, "generation": generation, "candidate_id": cid,
            "parent_ids": parent_ids, "operator": "crossover" if crossed else "optimizer",
            "lineage_debug_count": 0, "source": source,
            "strategy": f"Strategy: try BLOCK={block} with {warps} warps; keep the masked tail.",
            "stage_reached": "timed" if correct else "compile", "call_ok": correct,
            "correct": correct,
            "failure_kind": None if correct else FAILURES[rng.integers(len(FAILURES))],
            "error_trace": "" if correct else "Traceback (most recent call last):\nError: x\n",
            "case_names": CASES, "max_abs_err": [0.0] * len(CASES), "rel_err": [0.0] * len(CASES),
            "latency_us": latency, "ref_latency_us": [float(r) for r in ref_us],
            "latency_p20_us": latency, "latency_p80_us": latency, "speedup": speedup,
            "worst_speedup": speedup, "roofline_fraction": 0.5 if correct else None,
            "timing_meaningful": True, "sandboxed": True, "device": DEVICE, "backend": "cuda",
            "harness_version": "bench", "compile_s": 1.0, "check_s": 0.5,
            "bench_s": 0.5 if correct else 0.0, "llm_model": "m", "prompt_tokens": tokens,
            "completion_tokens": tokens // 4, "cost_usd": tokens * 2e-6, "llm_latency_s": 5.0,
            "reused": False, "seed": 0})
        calls.append({"campaign": "html-bench", "task": task, "island": island,
                      "generation": generation, "role": "optimizer", "model": "m",
                      "request_hash": cid, "sample_index": slot, "prompt_tokens": tokens,
                      "completion_tokens": tokens // 4, "latency_s": 5.0,
                      "cost_usd": tokens * 2e-6, "success": True, "error": None,
                      "response": "```python\n" + source + "```", "attempts": 1,
                      "messages_json": "[]", "replay_matched": None, "failure_kind": None,
                      "finished_at": None})
    return (pa.Table.from_pylist(rows, schema=results_io.EVALUATION_SCHEMA),
            pa.Table.from_pylist(calls, schema=results_io.LLM_CALL_SCHEMA), fresh)


class Phases:
    """Wall seconds spent in each phase of a page, each function's own time (a phase called
    inside another is taken out of it). A call on another thread (the lineage sources read
    in the background) is timed whole under its own name."""

    def __init__(self) -> None:
        self.seconds: collections.Counter = collections.Counter()
        self._stack: list[list] = []

    def wrap(self, owner, name: str, phase: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                started = time.perf_counter()
                try:
                    return inner(*args, **kwargs)
                finally:
                    self.seconds[f"{phase} (background)"] += time.perf_counter() - started
            self._stack.append([time.perf_counter(), 0.0])
            try:
                return inner(*args, **kwargs)
            finally:
                started, inside = self._stack.pop()
                spent = time.perf_counter() - started
                self.seconds[phase] += spent - inside
                if self._stack:
                    self._stack[-1][1] += spent

        setattr(owner, name, timed)


PHASES = (  # (module or class, function, phase), the outermost first
    (html_report, "write", "HTML and the rest"),
    (parts, "listing", "listing"),
    (parts, "read_parts", "reading parts"),
    (parts.PartReader, "read", "concatenation"),
    (parts, "frame", "pandas conversion"),
    (metrics, "results_of", "metrics.results_of"),
    (html_report, "campaign_page", "page data"),
    (html_report, "line_chart", "SVG"),
    (html_report, "bar_chart", "SVG"),
    (lineage, "walked_rows", "lineages"),
    (html_lineage, "section", "lineages"),
)
"""Where a cold page's time goes. Reading parts in the background is the lineages' sources,
read while the page data is computed (page data includes any wait for them)."""


def measure(folder: Path) -> dict:
    """Times the cold page and its phases, and the live page after one part lands."""
    phases = Phases()
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in PHASES]
    for owner, name, phase in PHASES:
        phases.wrap(owner, name, phase)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        out = html_report.write(folder)
        cold_s, cold_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    reader = snapshot.PartReader()
    state = snapshot.read(folder, reader)
    html_report.render(folder, reader=reader)
    last = sorted((folder / "evaluations").glob("part-*.parquet"))[-1]
    shutil.copy(last, last.with_name(last.name.replace(".parquet", "-landed.parquet")))
    started = time.perf_counter()
    html_report.render(folder, live=True, reader=reader)
    live_s = time.perf_counter() - started
    return {"rows": len(state.results.evaluations), "cold_s": cold_s, "cold_cpu_s": cold_cpu_s,
            "phases": phases.seconds, "live_s": live_s, "html_mb": out.stat().st_size / 1e6}


def _phase_line(seconds: collections.Counter) -> str:
    order = [phase for _, _, phase in PHASES[1:]] + [PHASES[0][2]]
    names = list(dict.fromkeys(order)) + sorted(k for k in seconds if k not in order)
    return ", ".join(f"{name} {seconds[name]:.2f}" for name in names if name in seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=15)
    parser.add_argument("--islands", type=int, default=4)
    parser.add_argument("--offspring", type=int, default=25, help="rows per island and generation")
    parser.add_argument("--layouts", default="generation,engine")
    parser.add_argument("--keep", type=Path, help="build the folders under DIR and keep them")
    parser.add_argument("--repeat", type=int, default=1, help="cold pages per layout")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="html-bench-"))
    started = time.perf_counter()
    meta, built, torch_timings, campaign_start = build(args.rows, args.tasks, args.islands,
                                                       args.offspring)
    generations = meta["config"]["search"]["generations"]
    print(f"{sum(p[3].num_rows for p in built):,} rows: {args.tasks} tasks x {args.islands} "
          f"islands x {generations} generations x {args.offspring} offspring, made in "
          f"{time.perf_counter() - started:.1f} s; {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f} (other processes' load slows every figure below)")
    figures = []
    for layout in args.layouts.split(","):
        folder = root / layout
        if folder.exists():
            shutil.rmtree(folder)
        count = write(folder, layout, meta, built, torch_timings, campaign_start)
        colds = []
        for _ in range(args.repeat):
            for landed in (folder / "evaluations").glob("*-landed.parquet"):
                landed.unlink()
            timed = measure(folder)
            colds.append(f"{timed['cold_s']:.2f}")
            print(f"{layout:>10} layout, {count:,} parts (+ as many llm_calls parts): cold page "
                  f"{timed['cold_s']:.2f} s ({timed['cold_cpu_s']:.2f} s of CPU, load "
                  f"{os.getloadavg()[0]:.1f}; {timed['html_mb']:.1f} MB); live page after a "
                  f"part lands {timed['live_s']:.2f} s\n{'':>12}phases (s): "
                  f"{_phase_line(timed['phases'])}", flush=True)
        figures.append(f"{', '.join(colds)} s ({layout} layout, {count:,} parts)")
    print(f"FIGURE: page of {args.rows:,} rows in " + "; ".join(figures) + " (target: under 5 s)")
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    sys.exit(main())
