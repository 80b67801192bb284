"""Matmul-class sweep: every case x design x config of the baselines' tables, against cuBLAS.

What it answers: for each case the fitness harness times in the matmul-class built-in tasks,
which design (PERSISTENT, TMA, EPILOGUE, WARP_SPECIALIZE, FLATTEN, SPLIT_K, COPY, PAD_C) and tile/pipeline
config of the baseline's per-shape table (`CONFIGS`) is fastest, its TFLOP/s, and its ratio to
cuBLAS (torch.matmul / torch.bmm in fp16 on the same inputs): the evidence `CONFIGS` is set
from, one winner per bucket. How it runs, stays in its time box and survives a bad config:
kernel_sweep.py. The grid: the table's config, then each design (TMA loads; pointer loads are
the fallback of devices without TMA) with its tiles best-first by a prior (full last wave,
reuse per loaded element), designs interleaved; configs whose pipeline and staged C tile
overflow shared memory, or whose accumulator overflows registers, are left out. --wide sweeps
more (BLOCK_K 128, 2 to 5 stages, GROUP_M 4/8/16, every epilogue on every tile, split-K 2 on the
plain design): for one case at a time (--cases).

    python experiments/perf/matmul_sweep.py OUT_DIR [--tasks matmul,batched_matmul] [--cases 5000x3000]
        [--wide] [--max-seconds 240] [--max-configs 48] [--workers 12] [--smoke]

--smoke: the interpreter on CPU, one small case, the table's own config (what the test runs).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernel_sweep  # noqa: E402

TASKS = ("matmul", "batched_matmul")
SHARED_MEMORY_BYTES = 232448  # the most one program may use on sm_90 (227 KiB)
ACC_REGISTERS = 128  # fp32 accumulator registers per thread beyond which a tile spills
FULL_REUSE = 128 * 256 / (128 + 256)  # multiply-adds per loaded element of a 128x256 tile, per k
WARP_SPECIALIZED_WARPS = 4  # the compiler splits warps only at 4 (two consumer groups of 4); at 8 it does not
DESIGN_KNOBS = ("PERSISTENT", "TMA", "EPILOGUE", "WARP_SPECIALIZE", "FLATTEN", "SPLIT_K", "COPY", "PAD_C")
ABBREVIATIONS = {"PERSISTENT": "P", "TMA": "T", "EPILOGUE": "E", "WARP_SPECIALIZE": "W", "FLATTEN": "F",
                 "SPLIT_K": "S", "COPY": "C", "PAD_C": "D"}
ROW_ALIGN_ELEMENTS = 8
"""fp16 rows start 16-byte aligned where their length is a multiple of this (else TMA loads a copy)."""


@dataclasses.dataclass(frozen=True)
class Axes:
    """The values a grid takes each knob from (SPLIT_K > 1 only where `designs` allows it).

    Attributes:
      every_epilogue: sweep each epilogue on every tile; else the half-tile one (2) only where
        the whole-tile one (1) does not fit, as its smaller staging is all it brings.
    """

    tiles: tuple[tuple[int, int], ...]
    block_ks: tuple[int, ...]
    stages: tuple[int, ...]
    warps: tuple[int, ...]
    group_ms: tuple[int, ...]
    tmas: tuple[int, ...]
    epilogues: tuple[int, ...]
    every_epilogue: bool
    splits: tuple[int, ...]
    split_anywhere: bool


AXES = Axes(tiles=((128, 256), (256, 128), (128, 128), (64, 256), (128, 64), (64, 128), (64, 64)),
            block_ks=(64, 32), stages=(3, 4, 5), warps=(8, 4), group_ms=(8,), tmas=(1,), epilogues=(1, 2),
            every_epilogue=False, splits=(2, 4), split_anywhere=False)
WIDE = Axes(tiles=((128, 256), (256, 128), (128, 128)), block_ks=(64, 128), stages=(2, 3, 4, 5), warps=(8, 4),
            group_ms=(8, 4, 16), tmas=(1,), epilogues=(1, 2, 0), every_epilogue=True, splits=(2,),
            split_anywhere=True)


def shape_of(params: dict) -> tuple[int, int, int, int]:
    """Returns (batch, M, N, K) of a case."""
    return params.get("B", 1), params["M"], params["N"], params["K"]


def bucket_args(params: dict) -> tuple[int, int, int]:
    """Returns the arguments of the kernel modules' `_bucket`: (M, N, K)."""
    return shape_of(params)[1:]


def label(config: dict) -> str:
    design = " ".join(f"{ABBREVIATIONS[k]}{config[k]}" for k in DESIGN_KNOBS if k in config)
    return (f"{design} {config['BLOCK_M']}x{config['BLOCK_N']}x{config['BLOCK_K']} "
            f"s{config['num_stages']} w{config['num_warps']} g{config['GROUP_M']}")


def _stores(config: dict) -> int:
    """Returns how many TMA stores the launcher makes of a C tile (0: pointer stores): warp
    specialization and split-K partial sums store through pointers."""
    if (config["WARP_SPECIALIZE"] and config["TMA"]) or config.get("SPLIT_K", 1) > 1:
        return 0
    return config["EPILOGUE"]


def fits(config: dict) -> bool:
    """True if the pipeline and the staged C tile fit shared memory and the accumulator fits the
    registers of the warps that hold it (warp specialization adds a second consumer group)."""
    block_m, block_n, block_k = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
    c_stores = _stores(config)
    staged = config["num_stages"] * (block_m * block_k + block_k * block_n) * 2
    staged += block_m * block_n * 2 // c_stores if c_stores else 0
    holding_warps = config["num_warps"] * (2 if config["WARP_SPECIALIZE"] and config["TMA"] else 1)
    return staged <= SHARED_MEMORY_BYTES and block_m * block_n <= ACC_REGISTERS * holding_warps * 32


def score(shape, config: dict, sms: int) -> float:
    """A prior for the order configs are tried in: the last wave of tiles full, much reuse per
    loaded element, the warps that suit the tile, moderate stages, BLOCK_K 64."""
    batch, M, N, _ = shape
    block_m, block_n = config["BLOCK_M"], config["BLOCK_N"]
    units = batch * math.ceil(M / block_m) * math.ceil(N / block_n)
    waves = units / (math.ceil(units / sms) * sms)
    reuse = min(1.0, block_m * block_n / (block_m + block_n) / FULL_REUSE) ** 0.5
    preferred_warps = 8 if block_m * block_n >= 16384 and not config["WARP_SPECIALIZE"] else 4
    return waves * reuse * (1.0 if config["num_stages"] in (3, 4) else 0.97) * \
        (1.0 if config["BLOCK_K"] == 64 else 0.97) * (1.0 if config["num_warps"] == preferred_warps else 0.9)


def designs(knobs: dict, shape, sms: int, axes: Axes = AXES) -> list[dict]:
    """Returns the design settings a case is swept over (the epilogue is chosen per tile, see
    `tile_order`): FLATTEN only on the persistent TMA design and not with warp specialization
    (fused loops may lose it), warp specialization only with TMA loads and without split-K,
    split-K where few tiles meet a long K, or anywhere on the one-program-per-unit design if
    the axes say so; each way of copying an operand for TMA (COPY) where one has unaligned rows;
    C padded for TMA stores (PAD_C) where its rows are unaligned, on TMA designs without split-K."""
    batch, M, N, K = shape
    few_tiles = batch * math.ceil(M / 128) * math.ceil(N / 128) < sms and K >= 4 * max(M, N)
    splits = (1, *axes.splits) if "SPLIT_K" in knobs and (few_tiles or axes.split_anywhere) else (1,)
    copies = knobs["COPY"] if K % ROW_ALIGN_ELEMENTS or N % ROW_ALIGN_ELEMENTS else (0,)
    pads = knobs["PAD_C"] if N % ROW_ALIGN_ELEMENTS else (0,)
    found = []
    for persistent, tma, ws, split, copy, pad in itertools.product(knobs["PERSISTENT"], axes.tmas, (0, 1), splits,
                                                                   copies, pads):
        split_here = split == 1 or (not ws and (few_tiles or not persistent))
        # Warp specialization stores through pointers, so padding C's rows buys it nothing.
        pad_here = not pad or (tma and split == 1 and not ws)
        for flatten in (knobs["FLATTEN"] if persistent and tma and not ws else (0,)):
            if (tma or not ws) and split_here and (tma or not copy) and pad_here:
                design = {"PERSISTENT": persistent, "TMA": tma, "WARP_SPECIALIZE": ws, "FLATTEN": flatten,
                          "COPY": copy, "PAD_C": pad}
                found.append({**design, "SPLIT_K": split} if "SPLIT_K" in knobs else design)
    return found


def tile_order(shape, design: dict, sms: int, axes: Axes = AXES) -> list[dict]:
    """Returns the design's tile configs that fit, each tile shape's best by `score` first (shapes
    in order of their best), then each shape's second best, and so on; GROUP_M variants of them
    all after. Warp specialization is tried at the warps the compiler splits."""
    K = shape[3]
    warps = (WARP_SPECIALIZED_WARPS,) if design["WARP_SPECIALIZE"] else axes.warps
    epilogues = axes.epilogues if _stores({**design, "EPILOGUE": 1}) else (1,)
    by_shape: dict = {}
    for (block_m, block_n), block_k, stages, num_warps, epilogue in itertools.product(
            axes.tiles, axes.block_ks, axes.stages, warps, epilogues):
        config = {**design, "EPILOGUE": epilogue, "BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
                  "GROUP_M": axes.group_ms[0], "num_stages": stages, "num_warps": num_warps}
        needed = axes.every_epilogue or epilogue == epilogues[0] or not fits({**config, "EPILOGUE": epilogues[0]})
        if needed and fits(config) and (stages == axes.stages[0] or stages <= math.ceil(K / block_k)):
            by_shape.setdefault((block_m, block_n), []).append(config)
    ranked = [sorted(configs, key=lambda c: -score(shape, c, sms)) for configs in by_shape.values()]
    ranked.sort(key=lambda configs: -score(shape, configs[0], sms))
    first = [c for rank in itertools.zip_longest(*ranked) for c in rank if c is not None]
    return first + [{**c, "GROUP_M": group} for group in axes.group_ms[1:] for c in first]


def grid(module, params: dict, sms: int, max_configs: int, wide: bool = False) -> list[dict]:
    """Returns up to `max_configs` full configs: the table's own first, then the designs in
    turn, each design's tiles in `tile_order`."""
    axes = WIDE if wide else AXES
    shape = shape_of(params)
    table = dict(module.CONFIGS[module._bucket(*shape[1:])])
    per_design = [[{**table, **config} for config in tile_order(shape, design, sms, axes)]
                  for design in designs(module.KNOBS, shape, sms, axes)]
    return kernel_sweep.interleaved(table, per_design, label, max_configs)


FAMILY = kernel_sweep.Family(title="Matmul", tasks=TASKS, library="cuBLAS", grid=grid, bucket_args=bucket_args,
                             design_knobs=DESIGN_KNOBS, label=label, smoke_case=1)  # smoke: 65x129x70, odd sizes


if __name__ == "__main__":
    sys.exit(kernel_sweep.main(FAMILY, description=__doc__.splitlines()[0]))
