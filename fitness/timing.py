"""The one place that times a kernel call and converts a latency to roofline units.

On a GPU: device events around each call, warm-up (and so compilation) excluded, the
last-level cache flushed before every timed call with a buffer larger than it, callables
interleaved run by run (baseline and candidate see the same clocks and neighbours), CUDA
graphs for launch-bound calls, and the median with p20/p80 kept. Under the interpreter the
wall clock is used and the numbers are flagged as not meaningful.

Repetition is adaptive: runs come in growing batches, and after each batch `stop_reason`
decides, from the samples alone, whether the median is known well enough (a distribution-free
confidence interval narrower than `ci_rel`), whether the callable is clearly slower than what
the caller cares about, or whether the run or time budget is spent. Whatever the reason, the
reported median is the median of every run that was timed.

Before that, a callable long enough to heat the chip is run until its latency stops drifting
(`settled`): a compute-bound kernel starts at the boost clock, and the power limiter pulls the
clock down only after some 0.1 s of load (13.7% slower on an H200's 8192^3 fp16 matmul), so a
timing shorter than that measures whatever the previous work left behind. The settling
batches are timed like the real ones and discarded, except the one that shows the state has
settled, which is the first timed batch.

The clock functions are bound when this module is imported, which the worker does before
it imports any candidate: a candidate that patches `time` or `torch.cuda.Event` afterwards
does not change what is measured.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import statistics
import time
from typing import Callable, Mapping, Sequence

from fitness.device import DeviceInfo

_perf_counter = time.perf_counter


@dataclasses.dataclass(frozen=True)
class TimingConfig:
    """How long to warm up and when to stop timing.

    Attributes:
      warmup_runs: untimed calls of each callable first (compilation, autotuning, caches),
        and as many untimed rounds after graph capture (a graph's first replay uploads it).
      warmup_s: seconds of untimed runs before the first timed one when the SM clock is
        down (below 90% of the fastest this process has measured, and always the first
        time): an idle GPU drops its clocks and takes tens of milliseconds to raise them,
        and runs timed during the ramp are slow by a different amount each time. A warm
        GPU skips it, so a burst of timings pays it once.
      min_runs: timed runs per callable before any stop (the first batch); at 20 the 95%
        interval of the median is the 6th to 15th sample, so one outlier cannot stop it.
      max_runs: timed runs per callable at most.
      max_timed_s: timed work per callable at most (the sum of its runs, in seconds); a
        slow kernel stops here after `min_runs`, whatever its spread.
      ci_rel: stop once the confidence interval of the median is narrower than this
        fraction of the median on each side: at 0.5%, sampling alone moves three timings
        of a kernel apart by about 1%, half of issue 12's 2% bound. 0 never stops on it.
      confidence: coverage of that interval (also of the "clearly slower" decision).
      use_graphs: time CUDA graph replays whenever the call can be captured. Triton's
        Python launcher costs tens of microseconds of host time per launch (62 us measured
        for a 6 us kernel on an H200 host): events around an eager launch then time the
        host, not the kernel. A replay has no per-kernel host cost.
      settle_above_us: a callable whose batch median is at least this is heavy enough to
        move the clock itself: behind the flush (~25 us) and the pad it keeps the GPU busy
        >= ~80% of the time, which for tensor-core work is past an H200's 700 W; below it
        only the SM clock has to be steady (see `settled`).
      settle_min_s: seconds of a heavy callable's settling batches before it may be timed:
        measured on an H200, a 2 ms matmul ran at boost for ~0.1 s of load, then up to 14% slower.
      settle_max_s: settling stops after this many seconds, settled or not (0: no settling,
        the first batch is timed whatever came before it).
      settle_batch_s: seconds a settling batch lasts at least after the first, so that two
        batches in a row are far enough apart in time to show a drift.
      settle_rel: settled once the last two batch medians (heavy callables) and the last two
        SM clock reads agree within this fraction.
    """

    warmup_runs: int = 3
    warmup_s: float = 0.05
    min_runs: int = 20
    max_runs: int = 500
    max_timed_s: float = 0.05
    ci_rel: float = 0.005
    confidence: float = 0.95
    use_graphs: bool = True
    settle_above_us: float = 200.0
    settle_min_s: float = 0.15
    settle_max_s: float = 0.3
    settle_batch_s: float = 0.02
    settle_rel: float = 0.01


INTERPRETER_TIMING = TimingConfig(warmup_runs=1, min_runs=3, max_runs=3)

STOP_REASONS = ("ci", "slower", "max")
"""Why timing a callable stopped: its median's interval is tight; the interval lies above the
caller's `give_up_above_us`; the run or time budget is spent."""


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """Summary of one callable's timed runs, in microseconds; `stopped` is one of
    STOP_REASONS. Plain fields only: the worker sends `stats.__dict__` as JSON."""

    median_us: float
    p20_us: float
    p80_us: float
    runs: int
    method: str  # "events", "graph" or "wall"
    stopped: str


def _summarize(samples_us: Sequence[float], method: str, stopped: str) -> LatencyStats:
    ordered = sorted(samples_us)

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return LatencyStats(statistics.median(ordered), quantile(0.2), quantile(0.8),
                        len(ordered), method, stopped)


@functools.lru_cache(maxsize=None)
def median_ci_ranks(runs: int, confidence: float) -> tuple[int, int] | None:
    """Returns 0-based ranks (lo, hi): the sorted samples' [lo]..[hi] cover the true median
    with probability >= `confidence`, whatever the distribution; None when `runs` is too few.

    The number of samples below the median is Binomial(runs, 1/2), so dropping k samples
    from each end misses the median with probability 2 * sum_{i<=k} C(runs, i) / 2**runs.
    The largest such k within 1 - confidence is kept; the sums are exact integers.
    """
    miss_num, miss_den = (1.0 - confidence).as_integer_ratio()
    allowed = miss_num << runs  # (1 - confidence) * 2**runs, scaled by miss_den
    tail, choose, dropped = 0, 1, -1
    for i in range((runs + 1) // 2):
        tail += choose  # sum_{j<=i} C(runs, j)
        if 2 * tail * miss_den > allowed:
            break
        dropped = i
        choose = choose * (runs - i) // (i + 1)
    return None if dropped < 0 else (dropped, runs - 1 - dropped)


def stop_reason(samples_us: Sequence[float], config: TimingConfig,
                give_up_above_us: float | None = None) -> str | None:
    """Returns why timing should stop after these samples (one of STOP_REASONS), or None to
    time another batch. A pure function of the samples, so the rule is tested without a GPU.

    Nothing stops before `min_runs`. "slower" comes first: a callable whose interval lies
    wholly above `give_up_above_us` is slower than the caller cares about at the interval's
    confidence (one-sided, (1 + confidence) / 2), and more runs would only refine a number
    nobody uses. Then "ci": the interval's half-width is under `ci_rel` of the median. Then
    "max": `max_runs` runs or `max_timed_s` of timed work.
    """
    runs = len(samples_us)
    if runs < config.min_runs:
        return None
    ordered = sorted(samples_us)
    ranks = median_ci_ranks(runs, config.confidence)
    if ranks is not None:
        low, high = ordered[ranks[0]], ordered[ranks[1]]
        if give_up_above_us is not None and low > give_up_above_us:
            return "slower"
        if high - low < 2 * config.ci_rel * statistics.median(ordered):
            return "ci"
    if runs >= config.max_runs or sum(ordered) * 1e-6 >= config.max_timed_s:
        return "max"
    return None


def settled(medians_us: Sequence[Sequence[float]], clocks_mhz: Sequence[float],
            elapsed_s: float, config: TimingConfig) -> bool:
    """Returns whether timing may begin after these settling batches: `medians_us` holds one
    series per callable (its batch medians, oldest first), `clocks_mhz` the SM clock read
    before the first batch and after each (empty where it cannot be read), `elapsed_s` the
    seconds since the first batch began. A pure function, tested without a GPU.

    Always after `settle_max_s`. Otherwise the clock must have moved less than `settle_rel`
    since the last read; and if a callable is heavy (last median >= `settle_above_us`), at
    least `settle_min_s` must have passed (a boost clock holds steady for a while before the
    power limiter pulls it down, so steadiness alone proves nothing early) and every
    callable's last two medians must agree within `settle_rel`.
    """
    if elapsed_s >= config.settle_max_s:
        return True

    def steady(series: Sequence[float]) -> bool:
        return len(series) >= 2 and abs(series[-1] - series[-2]) <= config.settle_rel * series[-2]

    if len(clocks_mhz) >= 2 and not steady(clocks_mhz):
        return False
    if any(series[-1] >= config.settle_above_us for series in medians_us):
        return elapsed_s >= config.settle_min_s and all(steady(series) for series in medians_us)
    return True


def settling(run_batch: Callable[[list[int], int], list[list[float]]],
             read_clock: Callable[[], float | None], clock_mhz: float | None,
             config: TimingConfig) -> Callable[[list[int], int], list[list[float]]]:
    """Returns `run_batch` whose first call repeats until `settled` and returns only its last
    batch; later calls pass through. The first batch has the runs asked for; later settling
    batches last `settle_batch_s` at least (`max_runs` at most). `clock_mhz` is the clock read
    before the first batch, `read_clock` reads it after each (None: not readable)."""
    first = True

    def run_settled(active: list[int], runs: int) -> list[list[float]]:
        nonlocal first
        if not first:
            return run_batch(active, runs)
        first = False
        medians: list[list[float]] = [[] for _ in active]
        clocks = [clock_mhz] if clock_mhz else []
        started = _perf_counter()
        while True:
            began = _perf_counter()
            samples = run_batch(active, runs)
            batch_s = _perf_counter() - began
            for series, batch in zip(medians, samples):
                series.append(statistics.median(batch))
            clock = read_clock()
            if clock:
                clocks.append(clock)
            if settled(medians, clocks, _perf_counter() - started, config):
                return samples
            wanted = int(runs * config.settle_batch_s / max(batch_s, 1e-9)) + 1
            runs = max(config.min_runs, min(config.max_runs, wanted))

    return run_settled


def next_batch_runs(done: int, config: TimingConfig) -> int:
    """Returns how many runs the next batch adds: `min_runs`, then half of those done (up to
    `max_runs`): one synchronisation per growth step, at most a third more runs than needed."""
    if done < config.min_runs:
        return config.min_runs - done
    return max(1, min(done // 2, config.max_runs - done))


def time_adaptively(run_batch: Callable[[list[int], int], list[list[float]]], count: int,
                    config: TimingConfig, give_up_above_us: Sequence[float | None],
                    methods: Sequence[str]) -> list[LatencyStats]:
    """Returns the stats of `count` callables timed in batches until each has a stop reason.

    `run_batch(active, runs)` times `runs` interleaved runs of each callable index in
    `active` and returns their samples (us), one list per index; a callable that stopped is
    no longer run, the others go on interleaved. Every active callable has the same number
    of runs, so one batch size serves all.
    """
    samples: list[list[float]] = [[] for _ in range(count)]
    stopped: list[str | None] = [None] * count
    while None in stopped:
        active = [index for index in range(count) if stopped[index] is None]
        new = run_batch(active, next_batch_runs(len(samples[active[0]]), config))
        for index, batch in zip(active, new):
            samples[index].extend(batch)
            stopped[index] = stop_reason(samples[index], config, give_up_above_us[index])
    return [_summarize(bucket, method, why)
            for bucket, method, why in zip(samples, methods, stopped)]


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
          refill: Callable[[], None] | None = None,
          give_up_above_us: Sequence[float | None] | None = None) -> list[LatencyStats]:
    """Returns the latency of each callable, timed interleaved on `device`.

    `refill`, when given, runs before every call (warm-up and timed), untimed.
    `give_up_above_us`, one entry per callable (None: no limit), is the latency beyond which
    the caller does not care how slow the callable is (say, the best so far times a margin):
    timing that callable stops once its median is confidently above it, with
    `stopped="slower"` and a median that is still the median of the runs it had.
    """
    refill = refill or (lambda: None)
    give_up = list(give_up_above_us) if give_up_above_us is not None else [None] * len(fns)
    if len(give_up) != len(fns):
        raise ValueError(f"give_up_above_us has {len(give_up)} entries for {len(fns)} callables")
    if device.backend == "interpreter":
        return _bench_wall(fns, config or INTERPRETER_TIMING, refill, give_up)
    return _bench_events(fns, device, config or TimingConfig(), refill, give_up)


def _bench_wall(fns, config: TimingConfig, refill, give_up) -> list[LatencyStats]:
    for fn in fns:
        for _ in range(config.warmup_runs):
            refill()
            fn()

    def run_batch(active: list[int], runs: int) -> list[list[float]]:
        samples: list[list[float]] = [[] for _ in active]
        for _ in range(runs):
            for index, bucket in zip(active, samples):
                refill()
                start = _perf_counter()
                fns[index]()
                bucket.append((_perf_counter() - start) * 1e6)
        return samples

    return time_adaptively(run_batch, len(fns), config, give_up, ["wall"] * len(fns))


class _Gpu:
    """Real CUDA/HIP timing primitives, bound at import time (see the module docstring)."""

    def __init__(self):
        import torch

        self.torch = torch
        self.event = torch.cuda.Event
        self.record = torch.cuda.Event.record
        self.elapsed_ms = torch.cuda.Event.elapsed_time
        self.synchronize = torch.cuda.synchronize
        self.sleep = getattr(torch.cuda, "_sleep", None)  # a spin kernel of N clock cycles


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


_SPIN_CYCLES = 200_000  # about 0.1 ms at an H200's boost clock
_WARM_FRACTION = 0.9
_PAD_SLACK_US = 10.0
_PAD_CAP_US = 500.0
_peak_mhz = 0.0  # the fastest SM clock this process has measured


def _clock_mhz(gpu: _Gpu) -> float | None:
    """Returns the SM clock now, in MHz: a spin kernel of known cycles, timed with events
    (cycles per microsecond), behind a shorter spin that keeps the GPU busy while it is
    queued. None where the backend has no spin kernel."""
    if gpu.sleep is None:
        return None
    start, end = gpu.event(enable_timing=True), gpu.event(enable_timing=True)
    gpu.sleep(_SPIN_CYCLES // 4)
    gpu.record(start)
    gpu.sleep(_SPIN_CYCLES)
    gpu.record(end)
    gpu.synchronize()
    return _SPIN_CYCLES / max(gpu.elapsed_ms(start, end) * 1e3, 1e-3)


def _bench_events(fns, device: DeviceInfo, config: TimingConfig, refill,
                  give_up) -> list[LatencyStats]:
    """Count warm-up, capture, a warm-up of what will be timed (`warmup_s` long when the
    clock is down), settling batches (`settling`), then adaptive batches of event-timed
    runs, each behind a pad: a spin kernel twice as long as the host takes to enqueue the
    call, so the whole call is queued before its start event fires and the interval holds
    GPU work, never launcher jitter."""
    global _peak_mhz
    gpu = _gpu()
    torch = gpu.torch
    flush = torch.empty(max(2 * device.llc_bytes, 64 << 20), dtype=torch.int8,
                        device=device.torch_device)
    runnables, methods = [], []
    for fn in fns:
        for _ in range(config.warmup_runs):
            refill()
            fn()
        if config.use_graphs:
            fn, captured = _as_graph(fn, gpu)
            methods.append("graph" if captured else "events")
        else:
            methods.append("events")
        runnables.append(fn)
    clock_mhz = _clock_mhz(gpu)
    cold = clock_mhz is None or clock_mhz < _WARM_FRACTION * (_peak_mhz or float("inf"))
    host_us: list[list[float]] = [[] for _ in runnables]
    until, rounds = _perf_counter() + (config.warmup_s if cold else 0.0), 0
    while rounds < max(config.warmup_runs, 1) or _perf_counter() < until:
        for fn, spent in zip(runnables, host_us):
            refill()
            flush.zero_()
            enqueued = _perf_counter()
            fn()
            spent.append((_perf_counter() - enqueued) * 1e6)
        gpu.synchronize()
        rounds += 1
    if cold and clock_mhz is not None:
        clock_mhz = _clock_mhz(gpu)
    _peak_mhz = max(_peak_mhz, clock_mhz or 0.0)
    pads = [int((clock_mhz or 0.0) * min(_PAD_CAP_US, 2 * statistics.median(spent) + _PAD_SLACK_US))
            for spent in host_us]

    def run_batch(active: list[int], runs: int) -> list[list[float]]:
        pairs = [[(gpu.event(enable_timing=True), gpu.event(enable_timing=True))
                  for _ in range(runs)] for _ in active]
        for rep in range(runs):
            for index, slot in zip(active, pairs):
                start, end = slot[rep]
                refill()
                flush.zero_()
                if pads[index]:
                    gpu.sleep(pads[index])
                gpu.record(start)
                runnables[index]()
                gpu.record(end)
        gpu.synchronize()
        return [[gpu.elapsed_ms(start, end) * 1e3 for start, end in slot] for slot in pairs]

    def read_clock() -> float | None:
        global _peak_mhz
        clock = _clock_mhz(gpu)
        _peak_mhz = max(_peak_mhz, clock or 0.0)
        return clock

    return time_adaptively(settling(run_batch, read_clock, clock_mhz, config), len(runnables),
                           config, give_up, methods)


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
