"""Attention sweep: every case x design x config of flash_attention's table, against fused SDPA.

What it answers: for each case the fitness harness times in the flash_attention built-in task,
which design (TMA, HEAVY_FIRST, WARP_SPECIALIZE; the diagonal always split off) and tile /
pipeline config of the baseline's per-shape table (`CONFIGS`) is fastest, its TFLOP/s (the
task's count: causal, half of the full product), and its ratio to torch's
scaled_dot_product_attention(is_causal=True) in fp16 on the same inputs: the evidence
`CONFIGS` is set from, one winner per bucket (over all the bucket's cases, as one entry serves
them all). How it runs, stays in its time box and survives a bad config: kernel_sweep.py. The
grid depends on the bucket only, so a bucket's cases are timed on the same configs: the
table's config, then each design's tiles best-first by a prior (deep query tiles, key tiles of
64, three stages), designs interleaved; tiles whose accumulator and scores overflow registers
are left out. Warp specialization is tried at the warps the compiler splits.

    python experiments/perf/attention_sweep.py OUT_DIR [--cases S=4096] [--wide]
        [--max-seconds 240] [--max-configs 48] [--workers 12] [--smoke]

--smoke: the interpreter on CPU, one small case, the table's own config (what the test runs).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernel_sweep  # noqa: E402

TASKS = ("flash_attention",)
HEAD_DIM = 64  # the task's head dim: every case has it
TILE_REGISTERS = 128  # fp32 accumulator and score registers per thread beyond which a tile spills
WARP_SPECIALIZED_WARPS = 4  # the compiler splits warps only at 4 (two consumer groups of 4); at 8 it does not
DESIGN_KNOBS = ("TMA", "HEAVY_FIRST", "WARP_SPECIALIZE", "MASK_DIAGONAL")
ABBREVIATIONS = {"TMA": "T", "HEAVY_FIRST": "H", "WARP_SPECIALIZE": "W", "MASK_DIAGONAL": "D"}


@dataclasses.dataclass(frozen=True)
class Axes:
    """The values a grid takes each knob from."""

    tiles: tuple[tuple[int, int], ...]
    stages: tuple[int, ...]
    warps: tuple[int, ...]


AXES = Axes(tiles=((128, 64), (128, 128), (64, 64), (128, 32), (64, 128), (64, 32)), stages=(3, 2, 4),
            warps=(8, 4))
WIDE = Axes(tiles=((128, 64), (128, 128), (64, 64), (128, 32), (64, 128), (64, 32), (32, 64), (128, 16)),
            stages=(3, 2, 4, 1), warps=(8, 4, 2))


def bucket_args(params: dict) -> tuple[int]:
    """Returns the arguments of the kernel module's `_bucket`: (S,)."""
    return (params["S"],)


def label(config: dict) -> str:
    design = " ".join(f"{ABBREVIATIONS[k]}{config[k]}" for k in DESIGN_KNOBS)
    return f"{design} {config['BLOCK_M']}x{config['BLOCK_N']} s{config['num_stages']} w{config['num_warps']}"


def fits(config: dict) -> bool:
    """True if the output accumulator and one block of scores fit the registers of the warps
    that hold them (warp specialization adds a second consumer group)."""
    holding_warps = config["num_warps"] * (2 if config["WARP_SPECIALIZE"] and config["TMA"] else 1)
    per_thread = config["BLOCK_M"] * (HEAD_DIM + config["BLOCK_N"]) / (holding_warps * 32)
    return per_thread <= TILE_REGISTERS


def designs(knobs: dict) -> list[dict]:
    """Returns the design settings swept: the diagonal split off (masking every block only
    adds work), warp specialization only with TMA."""
    return [{"TMA": tma, "HEAVY_FIRST": heavy, "WARP_SPECIALIZE": ws, "MASK_DIAGONAL": 1}
            for tma, heavy, ws in itertools.product(sorted(knobs["TMA"], reverse=True),
                                                    sorted(knobs["HEAVY_FIRST"], reverse=True), (0, 1))
            if tma or not ws]


def tile_order(design: dict, axes: Axes) -> list[dict]:
    """Returns the design's tile configs that fit, by the sum of each value's place in its axis
    (each axis lists its values most promising first), so the first few already differ in tile,
    stages and warps alike."""
    warps = (WARP_SPECIALIZED_WARPS,) if design["WARP_SPECIALIZE"] else axes.warps
    ranked = sorted(itertools.product(enumerate(axes.tiles), enumerate(axes.stages), enumerate(warps)),
                    key=lambda picks: sum(place for place, _ in picks))
    configs = [{**design, "BLOCK_M": block_m, "BLOCK_N": block_n, "num_stages": stages, "num_warps": num_warps}
               for (_, (block_m, block_n)), (_, stages), (_, num_warps) in ranked]
    return [config for config in configs if fits(config)]


def grid(module, params: dict, sms: int, max_configs: int, wide: bool = False) -> list[dict]:
    """Returns up to `max_configs` full configs of the case's bucket: the table's own first,
    then the designs in turn, each design's tiles in `tile_order` (the same for every case of
    a bucket, whatever `sms`)."""
    table = dict(module.CONFIGS[module._bucket(*bucket_args(params))])
    per_design = [[{**table, **config} for config in tile_order(design, WIDE if wide else AXES)]
                  for design in designs(module.KNOBS)]
    return kernel_sweep.interleaved(table, per_design, label, max_configs)


FAMILY = kernel_sweep.Family(title="Attention", tasks=TASKS, library="SDPA", grid=grid, bucket_args=bucket_args,
                             design_knobs=DESIGN_KNOBS, label=label, smoke_case=1)  # smoke: S=65, odd


if __name__ == "__main__":
    sys.exit(kernel_sweep.main(FAMILY, description=__doc__.splitlines()[0]))
