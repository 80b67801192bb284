"""The one place that times a kernel call and converts a latency to roofline units.

On a GPU: device events around each call, warm-up (and so compilation) excluded, the
last-level cache flushed before every timed call with a buffer larger than it, callables
interleaved run by run (baseline and candidate see the same clocks and neighbours), CUDA
graphs for launch-bound calls, and the median with p20/p80 kept. Under the interpreter the
wall clock is used and the numbers are flagged as not meaningful.

The clock functions are bound when this module is imported, which the worker does before
it imports any candidate: a candidate that patches `time` or `torch.cuda.Event` afterwards
does not change what is measured.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
import time
from typing import Callable, Mapping, Sequence

from fitness.device import DeviceInfo

_perf_counter = time.perf_counter


@dataclasses.dataclass(frozen=True)
class TimingConfig:
    """How many runs to time.

    Attributes:
      warmup_runs: untimed calls first (compilation, autotuning, caches).
      min_runs / max_runs: bounds on timed runs per callable.
      target_s: aim for about this much timed work per callable (runs = target / estimate).
      use_graphs: time CUDA graph replays whenever the call can be captured. Triton's
        Python launcher costs tens of microseconds of host time per launch (62 us measured
        for a 6 us kernel on an H200 host): events around an eager launch then time the
        host, not the kernel, and no size threshold on the eager estimate can tell (the
        estimate itself includes the gap). A replay has no per-kernel host cost.
    """

    warmup_runs: int = 3
    min_runs: int = 30
    max_runs: int = 500
    target_s: float = 0.02
    use_graphs: bool = True


INTERPRETER_TIMING = TimingConfig(warmup_runs=1, min_runs=3, max_runs=3, target_s=0.0)


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """Summary of one callable's timed runs, in microseconds."""

    median_us: float
    p20_us: float
    p80_us: float
    runs: int
    method: str  # "events", "graph" or "wall"


def _summarize(samples_us: Sequence[float], method: str) -> LatencyStats:
    ordered = sorted(samples_us)

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return LatencyStats(statistics.median(ordered), quantile(0.2), quantile(0.8),
                        len(ordered), method)


def variants(inputs: Sequence, count: int = 2) -> list[list]:
    """Returns `count` input sets: `inputs`, then copies with every tensor's elements
    rotated by a different amount. Rotating keeps every value valid (indices stay in range,
    distributions stay the same) while no element stays where it was."""
    import torch

    sets = [list(inputs)]
    for shift in range(1, count):
        sets.append([torch.roll(value.flatten(), shift * 7919 % max(value.numel(), 1)).view_as(value)
                     if isinstance(value, torch.Tensor) and value.numel() > 1 else value
                     for value in inputs])
    return sets


def refiller(buffers: Sequence, variants: Sequence[Sequence]) -> Callable[[], None]:
    """Returns a callable that copies the next input set into `buffers`, in place.

    Called before every timed run (outside the timed interval): the callable under test
    meets the same pointers with different values each time, so a result cached by
    pointer, by shape or by sampled values is never valid, and timing measures real work.
    """
    import torch

    upcoming = itertools.cycle(variants)

    def refill() -> None:
        for buffer, value in zip(buffers, next(upcoming)):
            if isinstance(buffer, torch.Tensor):
                buffer.copy_(value)

    return refill


def bench(fns: Sequence[Callable[[], object]], device: DeviceInfo,
          config: TimingConfig | None = None,
          refill: Callable[[], None] | None = None) -> list[LatencyStats]:
    """Returns the latency of each callable, timed interleaved on `device`.

    `refill`, when given, runs before every call (warm-up and timed), untimed.
    """
    refill = refill or (lambda: None)
    if device.backend == "interpreter":
        return _bench_wall(fns, config or INTERPRETER_TIMING, refill)
    return _bench_events(fns, device, config or TimingConfig(), refill)


def _bench_wall(fns, config: TimingConfig, refill) -> list[LatencyStats]:
    for fn in fns:
        for _ in range(config.warmup_runs):
            refill()
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(config.min_runs):
        for fn, bucket in zip(fns, samples):
            refill()
            start = _perf_counter()
            fn()
            bucket.append((_perf_counter() - start) * 1e6)
    return [_summarize(bucket, "wall") for bucket in samples]


class _Gpu:
    """Real CUDA/HIP timing primitives, bound at import time (see the module docstring)."""

    def __init__(self):
        import torch

        self.torch = torch
        self.event = torch.cuda.Event
        self.record = torch.cuda.Event.record
        self.elapsed_ms = torch.cuda.Event.elapsed_time
        self.synchronize = torch.cuda.synchronize


_GPU = None


def _gpu() -> _Gpu:
    global _GPU
    if _GPU is None:
        _GPU = _Gpu()
    return _GPU


def bind_clocks() -> None:
    """Binds the GPU clock functions now (the worker calls this before any candidate)."""
    try:
        _gpu()
    except (ImportError, AttributeError):
        pass


def _as_graph(fn, gpu: _Gpu):
    """Returns a replay of `fn` captured in a CUDA graph, or `fn` if it cannot be captured."""
    torch = gpu.torch
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return graph.replay, True
    except Exception:  # capture is an optimisation; eager timing is still correct
        gpu.synchronize()
        return fn, False


def _bench_events(fns, device: DeviceInfo, config: TimingConfig, refill) -> list[LatencyStats]:
    gpu = _gpu()
    torch = gpu.torch
    flush = torch.empty(max(2 * device.llc_bytes, 64 << 20), dtype=torch.int8,
                        device=device.torch_device)

    def timed_once(fn) -> float:
        start, end = gpu.event(enable_timing=True), gpu.event(enable_timing=True)
        refill()
        flush.zero_()
        gpu.record(start)
        fn()
        gpu.record(end)
        gpu.synchronize()
        return gpu.elapsed_ms(start, end) * 1e3

    runnables, methods = [], []
    for fn in fns:
        for _ in range(config.warmup_runs):
            refill()
            fn()
        estimate_us = min(timed_once(fn) for _ in range(3))
        if config.use_graphs:
            fn, captured = _as_graph(fn, gpu)
            methods.append("graph" if captured else "events")
        else:
            methods.append("events")
        runnables.append((fn, estimate_us))
    total_estimate_s = sum(estimate for _, estimate in runnables) * 1e-6
    runs = int(config.target_s / max(total_estimate_s / len(runnables), 1e-7))
    runs = max(config.min_runs, min(config.max_runs, runs))
    pairs = [(gpu.event(enable_timing=True), gpu.event(enable_timing=True))
             for _ in range(runs * len(runnables))]
    for rep in range(runs):
        for index, (fn, _) in enumerate(runnables):
            start, end = pairs[rep * len(runnables) + index]
            refill()
            flush.zero_()
            gpu.record(start)
            fn()
            gpu.record(end)
    gpu.synchronize()
    samples = [[gpu.elapsed_ms(*pairs[rep * len(runnables) + index]) * 1e3 for rep in range(runs)]
               for index in range(len(runnables))]
    del flush
    return [_summarize(bucket, method) for bucket, method in zip(samples, methods)]


def roofline_fraction(device: DeviceInfo, flops: float, bytes_moved: float,
                      latency_us: float, dtype: str = "float32") -> float | None:
    """Returns (fastest possible time) / (measured time): 1.0 is at the roofline.

    None when the device's peaks are unknown or the run was not on a GPU.
    """
    if not device.timing_meaningful or latency_us <= 0:
        return None
    floor_s = device.roofline_s(flops, bytes_moved, dtype)
    return None if floor_s is None else floor_s / (latency_us * 1e-6)


def case_roofline(device: DeviceInfo, flops_fn, bytes_fn, params: Mapping,
                  latency_us: float) -> float | None:
    """Returns the roofline fraction of one case from the task's formulas."""
    if flops_fn is None or bytes_fn is None:
        return None
    return roofline_fraction(device, float(flops_fn(params)), float(bytes_fn(params)),
                             latency_us, str(params.get("dtype", "float32")))
