"""What a profile says: kernel records read from Nsight Compute or torch.profiler, a side's
numbers per call, and the fixed rules that turn ours-vs-compile numbers into a reason.

A kernel record has KERNEL_FIELDS, None where its profiler does not measure a field: ncu
(`ncu --csv --print-units base --metrics ...`, details page) gives every field; a torch.profiler
chrome trace gives duration, launch sizes, registers, shared memory and CUPTI's estimated
occupancy. Used by profile_cases.py.
"""

from __future__ import annotations

import csv
import io
import math
import re

MARKER_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: launched between the two sides under ncu
NCU_METRICS = {  # metric -> kernel record field
    "gpu__time_duration.sum": "time_us", "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct", "launch__registers_per_thread": "registers",
    "launch__grid_size": "grid", "launch__block_size": "block"}
NCU_EXTRA_METRICS = {  # dropped, and the case retried, if this ncu collects nothing with them
    "launch__waves_per_multiprocessor": "waves",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__occupancy_limit_registers": "blocks_limit_registers",
    "launch__occupancy_limit_shared_mem": "blocks_limit_shared_mem",
    "launch__occupancy_limit_warps": "blocks_limit_warps", "launch__occupancy_limit_blocks": "blocks_limit_blocks"}
LIMITS = {"blocks_limit_registers": "registers", "blocks_limit_shared_mem": "shared memory",
          "blocks_limit_warps": "warps per SM", "blocks_limit_blocks": "blocks per SM"}
"""ncu's per-SM block limits of a launch, by what imposes each; the smallest one holds."""
KERNEL_FIELDS = ("name", *NCU_METRICS.values(), *NCU_EXTRA_METRICS.values(), "dram_bytes", "shared_mem_bytes")
UNIT_SCALE = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,  # to us
              "ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6,  # ncu 2025 writes the short names
              "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}  # to bytes
KINETO_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
SIDE_FIELDS = ("kernels", "time_us", "dram_bytes", "dram_pct", "dram_source", "sm_pct", "occupancy_pct",
               "theoretical_occupancy_pct", "registers", "grid", "block", "waves", "l2_hit_pct", "main_kernel",
               "main_share", "kernel_names", "limited_by")
"""A side's numbers per call (`summarize`); occupancy, registers, grid, block, waves: its main kernel's."""
SLOWER = 1.05  # ours / compile kernel time from which the rules look for a cause
MORE_BYTES = 1.10  # DRAM bytes ratio that counts as moving more
BUSY_PCT = 50.0  # compile's use of a unit (DRAM, SM), in % of peak, from which ours is compared on it
GAP_PCT = 10.0  # percentage points that count as a difference
HELPER_SHARE = 0.05  # share of ours' time outside its main kernel worth naming
LIBRARY = re.compile(r"gemm|xmma|cutlass|nvjet|cublas|flash|fmha", re.I)


def _kernel(name: str) -> dict:
    return dict.fromkeys(KERNEL_FIELDS) | {"name": name}


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None  # "n/a"


def ncu_kernels(text: str) -> list[dict]:
    """Returns one record per kernel, in launch order, from ncu's CSV details output, whatever
    else the text holds (==PROF== lines, the application's own output)."""
    fields = NCU_METRICS | NCU_EXTRA_METRICS
    rows = [line for line in text.splitlines() if line.startswith('"')]
    header = next((i for i, line in enumerate(rows) if line.startswith('"ID",')), len(rows))
    table = io.StringIO("\n".join(rows[header:]))
    kernels: dict[int, dict] = {}
    for row in csv.DictReader(table):
        if row.get("Metric Name") not in fields or not row["ID"].isdigit():
            continue
        kernel = kernels.setdefault(int(row["ID"]), _kernel(row["Kernel Name"]))
        value = _number(row["Metric Value"])
        kernel[fields[row["Metric Name"]]] = None if value is None else value * UNIT_SCALE.get(row["Metric Unit"], 1.0)
    for kernel in kernels.values():
        if kernel["dram_read_bytes"] is not None and kernel["dram_write_bytes"] is not None:
            kernel["dram_bytes"] = kernel["dram_read_bytes"] + kernel["dram_write_bytes"]
    return [kernels[key] for key in sorted(kernels)]


def split_at_marker(kernels: list[dict]) -> dict[str, list[dict]]:
    """Returns {"ours": the kernels before the first marker, "compile": those after it}."""
    marks = [i for i, kernel in enumerate(kernels) if MARKER_KERNEL in kernel["name"]]
    if not marks:
        raise ValueError(f"no {MARKER_KERNEL} among the {len(kernels)} profiled kernels: the sides cannot be told apart")
    return {"ours": kernels[:marks[0]], "compile": kernels[marks[0] + 1:]}


def kineto_kernels(trace: dict) -> list[dict]:
    """Returns one record per device operation (kernel, copy, memset) of a torch.profiler
    chrome trace, in start order, with what CUPTI reports of its launch."""
    events = sorted((e for e in trace.get("traceEvents", []) if str(e.get("cat", "")).lower() in KINETO_CATEGORIES),
                    key=lambda e: e["ts"])
    kernels = []
    for event in events:
        args = event.get("args", {})
        kernel = _kernel(event["name"]) | {"time_us": float(event["dur"])}
        if "grid" in args:
            kernel.update(grid=math.prod(args["grid"]), block=math.prod(args["block"]),
                          registers=args.get("registers per thread"), shared_mem_bytes=args.get("shared memory"),
                          occupancy_pct=args.get("est. achieved occupancy %"))
        kernels.append(kernel)
    return kernels


def short_name(name: str) -> str:
    """Returns a kernel's function name without namespaces, template arguments or parameters."""
    plain = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    return re.split(r"[<(]", plain, maxsplit=1)[0].rsplit("::", 1)[-1][:48] or plain[:48]


def summarize(kernels: list[dict] | None, wall_us: float | None, model_bytes: float,
              peak_gbs: float | None) -> dict:
    """Returns a side's SIDE_FIELDS per call: totals over its kernels, time-weighted DRAM, SM
    and L2 percentages (DRAM % from `model_bytes` where not measured), its main (longest)
    kernel's launch. `kernels` None: only the wall time is known."""
    if kernels is None:
        return dict.fromkeys(SIDE_FIELDS) | {"time_us": wall_us}
    if not kernels or any(k["time_us"] is None for k in kernels):
        raise ValueError(f"the profiler recorded {len(kernels)} kernel(s), not all with a duration")
    total_us = sum(k["time_us"] for k in kernels)
    main = max(kernels, key=lambda k: k["time_us"])

    def weighted(key: str) -> float | None:
        values = [k[key] for k in kernels]
        return None if None in values else sum(v * k["time_us"] for v, k in zip(values, kernels)) / total_us

    dram_pct, source = weighted("dram_pct"), "counters"
    if dram_pct is None and peak_gbs:
        dram_pct, source = model_bytes / (total_us * 1e-6) / (peak_gbs * 1e9) * 100, "model"
    dram_bytes = [k["dram_bytes"] for k in kernels]
    return {"kernels": len(kernels), "time_us": total_us, "dram_bytes": None if None in dram_bytes else sum(dram_bytes),
            "dram_pct": dram_pct, "dram_source": source if dram_pct is not None else None,
            "sm_pct": weighted("sm_pct"), "l2_hit_pct": weighted("l2_hit_pct"),
            "main_kernel": short_name(main["name"]), "main_share": main["time_us"] / total_us,
            "kernel_names": " ".join(short_name(k["name"]) for k in kernels), "limited_by": _limit(main),
            **{key: main[key] for key in ("occupancy_pct", "theoretical_occupancy_pct", "registers", "grid",
                                          "block", "waves")}}


def _limit(kernel: dict) -> str | None:
    """Returns what caps the kernel's blocks per SM ("registers: 2 blocks/SM"), None unknown."""
    limits = {label: kernel[key] for key, label in LIMITS.items() if kernel[key] is not None}
    if not limits:
        return None
    label = min(limits, key=limits.get)
    return f"{label}: {limits[label]:.0f} blocks/SM"


# ---- the rules: each compares ours with compile's numbers and says what it finds, or "" --------

def _known(*values) -> bool:
    return all(v is not None for v in values)


def _launches(ours: dict, theirs: dict) -> str:
    if not _known(ours["kernels"], theirs["kernels"]) or ours["kernels"] <= theirs["kernels"]:
        return ""
    outside = 1 - ours["main_share"]
    return (f"ours launches {ours['kernels']} kernels vs compile's {theirs['kernels']}"
            + (f" ({outside:.0%} of ours outside {ours['main_kernel']})" if outside >= HELPER_SHARE else ""))


def _bytes(ours: dict, theirs: dict) -> str:
    if not _known(ours["dram_bytes"], theirs["dram_bytes"]) or ours["dram_bytes"] <= MORE_BYTES * theirs["dram_bytes"]:
        return ""
    return (f"ours moves {ours['dram_bytes'] / max(theirs['dram_bytes'], 1):.2f}x the DRAM bytes "
            f"({ours['dram_bytes'] / 1e6:.1f} vs {theirs['dram_bytes'] / 1e6:.1f} MB)")


def _launch(side: dict) -> str:
    sizes = " x ".join(f"{side[key]:.0f} {label}" for key, label in (("grid", "programs"), ("block", "threads"))
                       if side[key] is not None)
    return sizes + (f", {side['registers']:.0f} regs" if side["registers"] is not None else "")


def _in_flight(ours: dict, theirs: dict) -> str:
    """Returns whether ours keeps fewer warps in flight than compile, with both launches."""
    if not _known(ours["occupancy_pct"], theirs["occupancy_pct"]):
        return ""
    verdict = "fewer warps in flight" if ours["occupancy_pct"] < theirs["occupancy_pct"] - GAP_PCT else "occupancy alike"
    launches = f"; {_launch(ours)} vs {_launch(theirs)}" if _launch(ours) and _launch(theirs) else ""
    cap = f"; ours capped by {ours['limited_by']}" if ours["limited_by"] and verdict.startswith("fewer") else ""
    return f": {verdict} (occupancy {ours['occupancy_pct']:.0f}% vs {theirs['occupancy_pct']:.0f}%{launches}{cap})"


def _unit_use(key: str, label: str):
    """Returns the rule: ours uses `key` (a % of peak) well below compile, which uses it much."""
    def rule(ours: dict, theirs: dict) -> str:
        if not _known(ours[key], theirs[key]) or theirs[key] < BUSY_PCT or ours[key] >= theirs[key] - GAP_PCT:
            return ""
        return f"ours at {ours[key]:.0f}% {label} vs compile {theirs[key]:.0f}%" + _in_flight(ours, theirs)
    return rule


def _waves(ours: dict, theirs: dict) -> str:
    waves = ours["waves"]
    if waves is None:
        return ""
    if waves < 1 <= (theirs["waves"] or 0):
        return f"ours fills {waves:.2f} of a wave ({ours['grid']:.0f} programs) vs compile's {theirs['waves']:.1f} waves"
    last = waves - math.floor(waves)
    return f"ours' last wave {last:.0%} full ({waves:.2f} waves)" if waves > 1 and 0 < last < 0.5 else ""


def _library(ours: dict, theirs: dict) -> str:
    name = theirs["main_kernel"] or ""
    return f"compile's main kernel is a library one ({name})" if LIBRARY.search(name) else ""


RULES = (_launches, _bytes, _unit_use("dram_pct", "of DRAM peak"), _unit_use("sm_pct", "SM throughput"),
         _waves, _library)


def reason(ours: dict, theirs: dict, profiler: str) -> str:
    """Returns the one-line reason: the kernel-time ratio, then what every rule in RULES finds."""
    if not _known(ours.get("time_us"), theirs.get("time_us")):
        return "not compared: a side has no measurement"
    ratio, measured = ours["time_us"] / theirs["time_us"], "wall time" if profiler == "none" else "kernel time"
    head = f"ours {ratio:.2f}x compile's {measured} ({ours['time_us']:.1f} vs {theirs['time_us']:.1f} us, {profiler})"
    if ratio < SLOWER:
        return f"{head}: not slower here"
    found = [text for rule in RULES if (text := rule(ours, theirs))]
    return "; ".join([head, *found] if found else
                     [head, "no rule fired (launches, DRAM bytes, DRAM %, SM %, occupancy, waves within margins)"])
