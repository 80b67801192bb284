"""Built-in suite on a GPU: baseline kernel vs torch eager vs torch.compile, per task and case.

What it answers: how good are our baselines (the speedup reference) against what a user
gets from PyTorch, and how close each is to the device's roofline, measured rather than
taken from a datasheet: the device-to-device copy bandwidth (bytes read + written) and the
rate of a large fp16 matmul.

Baselines are trusted project code, so they run in this process; latencies come from
`fitness.measure.timing.bench` (device events, L2 flushed, callables interleaved), the same code
that times candidates.

    python experiments/perf/suite_bench.py --modes eager,default [--tasks softmax,matmul]
        [--json results.json]

Modes: eager (the task's PyTorch reference), default (torch.compile), max-autotune
(torch.compile(mode="max-autotune")). Prints one markdown table row per case.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time

import torch

from benchmarks import registry
from timing_repeat import load_baseline  # beside this script
from fitness import device as device_lib
from fitness.measure import timing


def measure_ceilings(device) -> dict:
    """Returns the measured copy bandwidth (GB/s, read + write) and fp16/fp32 matmul TFLOP/s."""
    n_bytes = 2 << 30
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device.torch_device).normal_()
    dst = torch.empty_like(src)
    # Eager events: a 1 ms copy is not launch-bound, and its graph replay measured only
    # 2.7 TB/s on an H200 where eager events measured 4.27 TB/s (and a 201 MB vector_add
    # kernel moved 3.8 TB/s), so the replay under-reports this one.
    [copy] = timing.bench([lambda: dst.copy_(src)], device, timing.TimingConfig(use_graphs=False))
    copy_gbs = 2 * n_bytes / (copy.median_us * 1e-6) / 1e9
    del src, dst
    rates = {}
    for dtype in (torch.float16, torch.float32):
        a = torch.randn(8192, 8192, device=device.torch_device, dtype=dtype)
        b = torch.randn(8192, 8192, device=device.torch_device, dtype=dtype)
        [mm] = timing.bench([lambda: a @ b], device)
        rates[str(dtype).removeprefix("torch.")] = 2 * 8192**3 / (mm.median_us * 1e-6) / 1e12
    return {"copy_gbs": copy_gbs, "matmul_tflops": rates}


def roofline(ceilings, flops: float, bytes_moved: float, dtype: str, latency_us: float) -> float:
    """Returns floor time / measured time against the measured ceilings."""
    rate = ceilings["matmul_tflops"].get(dtype, ceilings["matmul_tflops"]["float32"])
    floor_s = max(bytes_moved / (ceilings["copy_gbs"] * 1e9), flops / (rate * 1e12))
    return floor_s / (latency_us * 1e-6)


def _sdpa_causal(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


NATIVE = {"matmul": torch.matmul, "batched_matmul": torch.bmm, "flash_attention": _sdpa_causal}
"""What a user calls in PyTorch for the matmul-class tasks: cuBLAS / fused SDPA in the input
dtype (fp32 accumulation inside). Their references upcast to fp32 for exactness, which would
make torch look 10x slower than it is; elsewhere the reference is what torch eager runs."""


def compiled(fn, mode: str):
    torch._dynamo.reset()
    return torch.compile(fn, mode=None if mode == "default" else mode, dynamic=False)


def bench_task(task, device, ceilings, modes, max_cases: int, seed: int = 1234) -> list[dict]:
    baseline = load_baseline(task, tempfile.gettempdir())
    rows = []
    for case in task.cases[:max_cases]:
        args = task.make_inputs(case.params, seed, device.torch_device)
        contenders = {"baseline": baseline}
        torch_fn = NATIVE.get(task.name, task.reference)
        if "eager" in modes:
            contenders["eager"] = torch_fn
        started = time.perf_counter()
        for mode in modes:
            if mode != "eager":
                fn = compiled(torch_fn, mode)
                fn(*args)  # compile outside the timing
                contenders[mode] = fn
        compile_s = time.perf_counter() - started
        names = list(contenders)
        stats = timing.bench([lambda f=contenders[n]: f(*args) for n in names], device)
        dtype = str(case.params.get("dtype", "float32"))
        flops, bytes_moved = task.flops(case.params), task.bytes(case.params)
        row = {"task": task.name, "case": case.name, "compile_s": compile_s}
        for name, stat in zip(names, stats):
            row[f"{name}_us"] = stat.median_us
            row[f"{name}_spread"] = (stat.p80_us - stat.p20_us) / stat.median_us
            row[f"{name}_roofline"] = roofline(ceilings, flops, bytes_moved, dtype, stat.median_us)
        rows.append(row)
        print(format_row(row, names), flush=True)
        del args
        torch.cuda.empty_cache()
    return rows


def format_row(row: dict, names) -> str:
    cells = [row["task"], row["case"]]
    for name in names:
        cells.append(f"{row[f'{name}_us']:.1f} ({100 * row[f'{name}_roofline']:.0f}%)")
    for name in names[1:]:
        cells.append(f"{row[f'{name}_us'] / row['baseline_us']:.2f}x")
    return "| " + " | ".join(cells) + " |"


def geomean(values) -> float:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="eager,default",
                        help="comma list of eager, default, max-autotune")
    parser.add_argument("--tasks", default="", help="comma list (default: whole suite)")
    parser.add_argument("--json", default="", help="write rows and ceilings here")
    parser.add_argument("--max-cases", type=int, default=100,
                        help="the first N GPU cases of each task (max-autotune compiles are slow)")
    args = parser.parse_args(argv)
    device = device_lib.detect("auto")
    if device.backend == "interpreter":
        print("suite_bench needs a GPU (torch sees none)", file=sys.stderr)
        return 2
    modes = [m for m in args.modes.split(",") if m]
    tasks = registry.builtin().tasks()
    if args.tasks:
        wanted = set(args.tasks.split(","))
        tasks = [t for t in tasks if t.name in wanted]
    ceilings = measure_ceilings(device)
    print(f"device: {device.name}; torch {torch.__version__}; measured copy "
          f"{ceilings['copy_gbs']:.0f} GB/s, matmul "
          + ", ".join(f"{k} {v:.0f} TFLOP/s" for k, v in ceilings["matmul_tflops"].items()))
    names = ["baseline"] + modes
    print("| task | case | " + " | ".join(f"{n} us (roofline)" for n in names) + " | "
          + " | ".join(f"{n}/baseline" for n in modes) + " |")
    print("|" + "---|" * (2 + len(names) + len(modes)))
    rows = []
    for task in tasks:
        try:
            rows.extend(bench_task(task, device, ceilings, modes, args.max_cases))
        except Exception as error:  # one task's failure must not lose the others' numbers
            print(f"| {task.name} | FAILED: {type(error).__name__}: {str(error)[:200]} |")
    for mode in modes:
        print(f"geomean speedup of baseline over {mode}: "
              f"{geomean([r[f'{mode}_us'] / r['baseline_us'] for r in rows if f'{mode}_us' in r]):.2f}x")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"device": device.name, "torch": torch.__version__,
                       "ceilings": ceilings, "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
