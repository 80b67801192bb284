"""Memory-bound sweep: per case of the row, elementwise and data-movement built-in tasks, a
seeded sample of each baseline's knob space (`KNOBS`), against torch eager (the task's reference).

What it answers: per case, which setting of the baseline's table (`CONFIGS`) is fastest and its
bytes moved per second as % of a device-to-device copy: the evidence `CONFIGS` is set from, one
winner per bucket. How it runs and stays in its time box: kernel_sweep.py. The grid depends on
the bucket only (a bucket's cases are timed on the same configs): the table's config, then
inductor's wide-row settings (one or two rows a program, 8 or 16 warps), the table's neighbours
(one knob one step away) and seeded samples of each design, interleaved; blocks past the
bucket's extents, and threads holding no element or more than ELEMENTS_PER_THREAD, left out.

    python experiments/perf/membound_sweep.py OUT_DIR [--tasks row_sum,cumsum] [--cases 4096x4096]
        [--max-seconds 450] [--compile-share 0.6] [--max-configs 32] [--workers 16] [--smoke]
--smoke: the interpreter on CPU, one small case, the table's own config (what the test runs).
"""

from __future__ import annotations

import csv
import itertools
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernel_sweep  # noqa: E402
from benchmarks import registry  # noqa: E402
from operators import knobs  # noqa: E402

TASKS = ("row_sum", "cumsum", "flip2d", "row_argmax", "bias_gelu", "softmax", "layernorm", "rmsnorm",
         "transpose", "cross_entropy", "embedding", "vector_add")
BUCKET_PARAMS = {("M", "N"): ("M", "N"), ("M", "V"): ("V",), ("T", "V", "D"): ("D",), ("N",): ("N",)}
"""A case's shape parameters -> the ones its kernel's `_bucket` takes, in order."""
EXTENTS = {"BLOCK_M": "M", "BLOCK_N": "N", "BLOCK_V": "V", "BLOCK_T": "T", "BLOCK_D": "D", "BLOCK_SIZE": "N"}
"""A block knob -> the case parameter it tiles (a block past the next power of two is waste)."""
DESIGN_KNOBS = ("ACC_2D", "LOOP", "LOOP_D", "REVERSE", "UNMASKED_BODY", "PROGRAMS", "FLAT")
ABBREVIATIONS = {"BLOCK_M": "BM", "BLOCK_N": "BN", "BLOCK_V": "BV", "BLOCK_T": "BT", "BLOCK_D": "BD",
                 "BLOCK_SIZE": "BS", "ACC_2D": "A", "LOOP": "L", "LOOP_D": "LD", "REVERSE": "R",
                 "UNMASKED_BODY": "U", "PROGRAMS": "P", "FLAT": "FL", "ALIGN": "AL", "GROUP_M": "G", "num_warps": "w",
                 "num_stages": "s"}
ELEMENTS_PER_THREAD = 64  # a block holding more a thread spills registers (and compiles slowly)
SAMPLES_PER_DESIGN = 64  # drawn before the extents filter; interleaving keeps the first few of each
WIDE_ROW_WARPS = (16, 8)
WIDE_ROW_BLOCK_M = (1, 2)


def bucket_args(params: dict) -> tuple[int, ...]:
    """Returns the arguments of the kernel module's `_bucket` for a case's params."""
    shape = tuple(name for name in params if name != "dtype")
    return tuple(params[name] for name in BUCKET_PARAMS[shape])


def label(config: dict) -> str:
    return " ".join(f"{ABBREVIATIONS.get(name, name)}{value}" for name, value in config.items())


def bucket_extents(module, bucket: str, params: dict) -> dict:
    """Returns {parameter: largest value} over the task's timed cases in `bucket` and `params`,
    so every case of a bucket gets the same grid."""
    task = registry.builtin().get(module.__name__.removeprefix("sweep_"))
    same = [case.params for case in task.cases if module._bucket(*bucket_args(case.params)) == bucket]
    return {name: max(p[name] for p in [params, *same]) for name in params if name != "dtype"}


def plausible(config: dict, extents: dict, values: dict) -> bool:
    """True if the config's block fits the operators' register cap, no block overshoots the
    next power of two of what it tiles (but for its smallest value), and every thread holds
    between one and ELEMENTS_PER_THREAD elements."""
    blocks = {name: value for name, value in config.items() if name in EXTENTS}
    if math.prod(blocks.values()) > knobs.MAX_BLOCK_ELEMENTS:
        return False
    if any(value > max(_next_power_of_two(extents[EXTENTS[name]]), values[name][0])
           for name, value in blocks.items() if EXTENTS[name] in extents):
        return False
    threads = config["num_warps"] * 32
    return threads <= math.prod(blocks.values()) <= threads * ELEMENTS_PER_THREAD


def _next_power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def wide_rows(table: dict, values: dict, extents: dict) -> list[dict]:
    """Returns the table's config with one or two rows a program, 8 or 16 warps and a row
    chunk of the whole row (up to the largest allowed), half or a quarter of it (what inductor's
    reductions run), by the sum of each value's place in its list, so the first few differ."""
    if "BLOCK_M" not in values or "BLOCK_N" not in values:
        return []
    widest = max(w for w in values["BLOCK_N"] if w <= max(_next_power_of_two(extents["N"]), values["BLOCK_N"][0]))
    widths = [w for w in (widest, widest // 2, widest // 4) if w in values["BLOCK_N"]]
    ranked = sorted(itertools.product(enumerate(WIDE_ROW_BLOCK_M), enumerate(WIDE_ROW_WARPS), enumerate(widths)),
                    key=lambda picks: sum(place for place, _ in picks))
    return [{**table, "BLOCK_M": rows, "num_warps": warps, "BLOCK_N": width}
            for (_, rows), (_, warps), (_, width) in ranked
            if rows in values["BLOCK_M"] and warps in values["num_warps"]]


def neighbours(table: dict, values: dict) -> list[dict]:
    """Returns the table's config with one knob moved one step down or up its values."""
    moved = []
    for name, value in table.items():
        allowed = values[name]
        place = allowed.index(value)
        moved += [{**table, name: allowed[i]} for i in (place - 1, place + 1) if 0 <= i < len(allowed)]
    return moved


def designs(values: dict, design: tuple[str, ...]) -> list[dict]:
    """Returns every design setting; PROGRAMS counts as one design per grid kind (0: a program
    per block; 1: persistent, its program count then sampled as tuning)."""
    axes = [sorted({min(v, 1) for v in values[name]}) if name == "PROGRAMS" else values[name] for name in design]
    return [dict(zip(design, combo)) for combo in itertools.product(*axes)]


def sampled(table: dict, values: dict, design: dict, rng: random.Random) -> list[dict]:
    """Returns seeded draws of every tuning knob (and of a persistent grid's program count)."""
    draws = []
    for _ in range(SAMPLES_PER_DESIGN):
        config = {name: rng.choice(values[name]) for name in table}
        config.update(design)
        if design.get("PROGRAMS"):
            config["PROGRAMS"] = rng.choice([v for v in values["PROGRAMS"] if v])
        draws.append(config)
    return draws


def grid(module, params: dict, sms: int, max_configs: int, wide: bool = False) -> list[dict]:
    """Returns up to `max_configs` configs of the case's bucket: the table's own first, then the
    wide-row settings and the neighbours, interleaved with each design's seeded samples (the same
    for every case of a bucket, whatever `sms`). --wide: four times `max_configs`."""
    bucket = module._bucket(*bucket_args(params))
    table = dict(module.CONFIGS[bucket])
    values = {name: tuple(module.KNOBS[name]) for name in table}
    extents = bucket_extents(module, bucket, params)
    rng = random.Random(f"{kernel_sweep.SEED}-{module.__name__}-{bucket}")
    lists = [wide_rows(table, values, extents), neighbours(table, values)]
    lists += [sampled(table, values, design, rng) for design in designs(values, tuple(module.DESIGN))]
    kept = [[config for config in configs if plausible(config, extents, values)] for configs in lists]
    return kernel_sweep.interleaved(table, kept, label, max_configs * (4 if wide else 1))


def copy_gbs() -> float:
    """Returns the device-to-device copy bandwidth (GB/s, read + write) of 1 GiB, eager (a
    graph replay under-reports a copy this long: suite_bench.measure_ceilings)."""
    import torch
    import triton.testing
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
    return 2 * src.numel() * 4 / (ms * 1e-3) / 1e9


def bandwidth_table(out: Path, copy: float | None) -> str:
    """Returns (and writes to OUT/bandwidth.md) per case the best and the table's config as
    GB/s and % of the copy bandwidth, from OUT/sweep.csv."""
    suite = registry.builtin()
    by_case: dict = {}
    with open(out / "sweep.csv") as handle:
        for row in csv.DictReader(handle):
            by_case.setdefault((row["task"], row["case"]), []).append(row)
    copy_text = f"{copy:.0f} GB/s" if copy else "not measured (interpreter)"
    lines = [f"Bandwidth per case (copy: {copy_text}):", "",
             "| task | case | bucket | best config | us | GB/s | % copy | table's us | table's % copy |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (task_name, case_name), rows in by_case.items():
        task = suite.get(task_name)
        params = next(c.params for c in (*task.cases, *task.interpreter_cases) if c.name == case_name)
        rate = lambda row: task.bytes(params) / float(row["median_us"]) / 1e3  # bytes / us -> GB/s
        share = lambda row: f"{100 * rate(row) / copy:.1f}%" if copy else "-"
        timed = [row for row in rows if row["median_us"]]
        table = next((row for row in rows if row["source"] == "table" and row["median_us"]), None)
        best = min(timed, key=lambda row: float(row["median_us"]), default=None)
        cells = [best["label"], best["median_us"], f"{rate(best):.0f}", share(best)] if best else \
            ["none timed", "-", "-", "-"]
        cells += [table["median_us"], share(table)] if table else ["-", "-"]
        lines.append(f"| {task_name} | {case_name} | {rows[0]['bucket']} | " + " | ".join(cells) + " |")
    text = "\n".join(lines + [""])
    (out / "bandwidth.md").write_text(text)
    return text


FAMILY = kernel_sweep.Family(title="Memory-bound", tasks=TASKS, library="torch eager", grid=grid,
                             bucket_args=bucket_args, design_knobs=DESIGN_KNOBS, label=label,
                             smoke_case=1)  # smoke: each task's second interpreter case, odd sizes


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        sys.exit("usage: membound_sweep.py OUT_DIR [options]: the output folder comes first")
    code = kernel_sweep.main(FAMILY, argv, description=__doc__.splitlines()[0])
    smoke = "--smoke" in argv
    print(bandwidth_table(Path(argv[0]), None if smoke else copy_gbs()))
    return code


if __name__ == "__main__":
    sys.exit(main())
