"""The one place that times a kernel call and converts a latency to roofline units.

On a GPU: device events around each call, warm-up excluded, the cache flushed before every
timed call, callables interleaved run by run (the same clocks and neighbours for all), CUDA
graphs for launch-bound calls; under the interpreter the wall clock, flagged as not meaningful.
Runs come in growing batches until `stop_reason` says stop; a callable long enough to heat the
chip first runs until its latency stops drifting (`settled`).

Time is read through a `Clock`: `REAL_CLOCK` binds `time.perf_counter` at import and the GPU's
functions at `bind_clocks`, both before the worker imports any candidate, so a candidate that
patches `time` or `torch.cuda.Event` later does not change what is measured. Tests pass a fake.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import random
import statistics
import time
from typing import Callable, Mapping, Sequence

from fitness.device import DeviceInfo
from fitness.measure.timing_rules import (  # noqa: F401  (re-exported: the timing vocabulary)
    INTERPRETER_TIMING, STOP_REASONS, ClockWindow, TimingConfig, drifted, heavy,
    median_ci_ranks, next_batch_runs, settled, stop_reason)


class _Gpu:
    """Real CUDA/HIP timing primitives, bound when made (see the module docstring)."""

    def __init__(self):
        import torch

        self.torch = torch
        self.event = torch.cuda.Event
        self.record = torch.cuda.Event.record
        self.elapsed_ms = torch.cuda.Event.elapsed_time
        self.synchronize = torch.cuda.synchronize
        self.sleep = getattr(torch.cuda, "_sleep", None)  # a spin kernel of N clock cycles


@dataclasses.dataclass(eq=False)
class Clock:
    """What a timing reads time from: the host's seconds (`now`), the GPU's primitives
    (`gpu`: a `_Gpu`, made on first use when None) and this process's recent SM-clock reads
    (`recent`: (host seconds, MHz), the peak a light kernel waits for)."""

    now: Callable[[], float]
    gpu: object = None
    recent: ClockWindow = dataclasses.field(default_factory=ClockWindow)  # a 60-s window

    def device(self) -> _Gpu:
        """Returns the GPU's primitives, binding the real ones on the first call."""
        if self.gpu is None:
            self.gpu = _Gpu()
        return self.gpu


REAL_CLOCK = Clock(now=time.perf_counter)
"""The clock every timing uses unless given another: `time.perf_counter` as bound at import."""

SPENT_S: collections.Counter = collections.Counter()
"""Seconds this process's timings spent per phase ("prepare": warm-up calls and graph capture;
"warm": warm-up rounds and the first clock read; "settle": discarded settling batches;
"timed": the batches that count; callers add others, see `accounted`). For diagnosis only: a
candidate's process can write anything here."""


@contextlib.contextmanager
def phase(name: str, clock: Clock = REAL_CLOCK):
    """Adds the seconds spent inside the block to `SPENT_S[name]`."""
    began = clock.now()
    try:
        yield
    finally:
        SPENT_S[name] += clock.now() - began


@contextlib.contextmanager
def accounted(report: dict):
    """Fills `report` with what `SPENT_S` gained per phase inside the block, and the
    block's own seconds under "all" (the rest is the caller's untimed work)."""
    before = collections.Counter(SPENT_S)
    with phase("all"):
        yield
    report.update({name: SPENT_S[name] - before[name] for name in SPENT_S
                   if SPENT_S[name] != before[name]})


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


class _HeavyLoad:
    """When the latest run of heavy batches of the current `one_callers_cases` began and
    ended: the chip's recent load, which the next settling counts. Only one caller's cases
    share it: their kernels draw about the same power, another kernel's load may leave the
    clock where this one would not (evidence: RESULTS.md#timing-heavy-load-neighbours)."""

    active = False
    began = ended = float("-inf")

    @classmethod
    def note(cls, began: float, ended: float, medians_us: list[float],
             floors_us: Sequence[tuple[float, float] | None], config: TimingConfig) -> None:
        if not cls.active or not any(heavy(median, floor, config)
                                     for median, floor in zip(medians_us, floors_us)):
            return
        if began - cls.ended > config.settle_gap_s:
            cls.began = began
        cls.ended = ended

    @classmethod
    def loaded_s(cls, now: float, config: TimingConfig) -> float:
        fresh = cls.active and 0.0 <= now - cls.ended <= config.settle_gap_s
        return cls.ended - cls.began if fresh else 0.0


@contextlib.contextmanager
def one_callers_cases(continued: bool = False):
    """Times the cases of one caller (a candidate's, a baseline's) back to back: a heavy case
    settles on the load of the heavy case before it (`TimingConfig.settle_gap_s`).
    `continued`: more cases of the caller the last block timed (a candidate is timed one case
    per request), so the load they left still counts."""
    _HeavyLoad.active = True
    if not continued:
        _HeavyLoad.began, _HeavyLoad.ended = float("-inf"), float("-inf")
    try:
        yield
    finally:
        _HeavyLoad.active = False


def settling(run_batch: Callable[[list[int], int], list[list[float]]],
             read_clock: Callable[[], float | None], clock_mhz: float | None,
             config: TimingConfig, floors_us: Sequence[tuple[float, float] | None],
             peak_mhz: float = 0.0,
             clock: Clock = REAL_CLOCK) -> Callable[[list[int], int], list[list[float]]]:
    """Returns `run_batch` whose first call repeats until `settled` and returns only its last
    batch; later calls pass through. Later settling batches last `settle_batch_s` at least.
    `clock_mhz` is the clock read before the first batch, `read_clock` reads it after each
    (None: unreadable); the fastest read lately, by this process (`clock.recent`) or as the
    caller knows it (`peak_mhz`), is what a light kernel waits for. Heavy load just before
    (`_HeavyLoad`) counts toward `settle_min_s`. `floors_us`: see `heavy`."""
    first = True

    def timed_batch(active: list[int], runs: int) -> list[list[float]]:
        began = clock.now()
        samples = run_batch(active, runs)
        _HeavyLoad.note(began, clock.now(),
                        [statistics.median(b) if b else 0.0 for b in samples],
                        [floors_us[index] for index in active], config)
        return samples

    def run_settled(active: list[int], runs: int) -> list[list[float]]:
        nonlocal first
        if not first:
            with phase("timed", clock):
                return timed_batch(active, runs)
        first = False
        medians: list[list[float]] = [[] for _ in active]
        clocks = [clock_mhz] if clock_mhz else []
        started = clock.now()
        loaded_s = _HeavyLoad.loaded_s(started, config)
        while True:
            began = clock.now()
            samples = timed_batch(active, runs)
            batch_s = clock.now() - began
            for series, batch in zip(medians, samples):
                series.append(statistics.median(batch))
            mhz = read_clock()
            if mhz:
                clocks.append(mhz)
            peak = max(clock.recent.peak(clock.now()), peak_mhz)
            if settled(medians, clocks, clock.now() - started, config, loaded_s, peak,
                       [floors_us[index] for index in active]):
                SPENT_S["timed"] += batch_s  # the proving batch is the first timed one
                SPENT_S["settle"] += clock.now() - started - batch_s
                return samples
            wanted = int(runs * config.settle_batch_s / max(batch_s, 1e-9)) + 1
            runs = max(config.min_runs, min(config.max_runs, wanted))

    return run_settled


def time_adaptively(run_batch: Callable[[list[int], int], list[list[float]]], count: int,
                    config: TimingConfig, give_up_above_us: Sequence[float | None],
                    methods: Sequence[str],
                    floors_us: Sequence[tuple[float, float] | None] | None = None,
                    ) -> list[LatencyStats]:
    """Returns the stats of `count` callables timed in batches until each has a stop reason.

    `run_batch(active, runs)` times `runs` interleaved runs of each callable index in `active`
    and returns their samples (us), one list per index; one batch size, sized on the first
    active callable, serves all. With `floors_us`, a callable `heavy` at its first batch's
    median is timed for `heavy_min_timed_s` at least; one that is not, and whose runs
    `drifted` by the time it would stop, is timed again up to `config.retakes` times.
    """
    samples: list[list[float]] = [[] for _ in range(count)]
    stopped: list[str | None] = [None] * count
    min_timed_s: list[float] | None = None
    retakes: list[int] = []
    while None in stopped:
        active = [index for index in range(count) if stopped[index] is None]
        new = run_batch(active, next_batch_runs(len(samples[active[0]]), config))
        for index, batch in zip(active, new):
            samples[index].extend(batch)
        if min_timed_s is None:
            min_timed_s = [config.heavy_min_timed_s if floors_us is not None and heavy(
                statistics.median(bucket), floors_us[index], config) else 0.0
                for index, bucket in enumerate(samples)]
            retakes = [0 if floor_s else config.retakes for floor_s in min_timed_s]
        for index in active:
            why = stop_reason(samples[index], config, give_up_above_us[index], min_timed_s[index])
            if why in ("ci", "max") and retakes[index] > 0 and drifted(samples[index], config):
                retakes[index] -= 1
                samples[index], why = [], None
            stopped[index] = why
    return [_summarize(bucket, method, why)
            for bucket, method, why in zip(samples, methods, stopped)]


def run_shifts(seed: int, run: int, numels: Sequence[int]) -> list[int]:
    """Returns how far each input is rotated for run `run` of a timing seeded with `seed`
    (`FreshInputs`): drawn per run and per input, so both sides derive the same."""
    draw = random.Random(f"{seed}/{run}")
    return [draw.randrange(numel) if numel > 1 else 0 for numel in numels]


def rotated(value, shift: int):
    """Returns `value`'s elements, in row-major order, rotated left by `shift` (element i
    holds element i + shift), in `value`'s shape; non-tensors as they are."""
    import torch

    if not isinstance(value, torch.Tensor) or not shift:
        return value
    return torch.roll(value.reshape(-1), -shift).view(value.shape)


class FreshInputs:
    """Buffers a callable is timed on, refilled before every run with new values.

    Each run's values are the inputs with every tensor rotated by an amount drawn for that
    run from `seed` (`run_shifts`): the same pointers, other values every time, every value
    valid (indices stay in range, distributions stay the same). For timings of trusted code
    (`bench`: an external suite's harness, the perf scripts); a candidate's verdict is timed
    by the judge on inputs made fresh at release (`fitness.judge.timed_batch`).
    A tensor of one element cannot be rotated; it keeps its value.
    """

    def __init__(self, inputs: Sequence, seed: int):
        import torch

        self.base = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        self.buffers = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        self.numels = [v.numel() if isinstance(v, torch.Tensor) else 0 for v in inputs]
        self.seed = seed
        self.runs = 0  # refills so far; the last refill's values are run `runs - 1`'s

    def refill(self) -> None:
        """Writes the next run's values into the buffers (two copies per dense tensor)."""
        for buffer, base, shift in zip(self.buffers, self.base,
                                       run_shifts(self.seed, self.runs, self.numels)):
            if not shift:
                if hasattr(buffer, "copy_"):
                    buffer.copy_(base)
            elif buffer.is_contiguous() and base.is_contiguous():
                flat, source = buffer.view(-1), base.view(-1)
                flat[:flat.numel() - shift].copy_(source[shift:])
                flat[flat.numel() - shift:].copy_(source[:shift])
            else:
                buffer.copy_(rotated(base, shift))
        self.runs += 1


def refilled_copies(inputs: Sequence, seed: int = 0) -> tuple[list, Callable[[], None]]:
    """Returns buffers to time a callable on and their refill (`FreshInputs`)."""
    fresh = FreshInputs(inputs, seed)
    return fresh.buffers, fresh.refill


@dataclasses.dataclass
class Staged:
    """Callables made ready to time by `stage`: warmed up (compiled, autotuned, caches filled)
    and, on a GPU, captured in graphs. None of that needs a quiet device, so a caller that
    holds the device alone to time stages beside other work and holds it only to time."""

    runnables: list[Callable[[], object]]
    methods: list[str]  # "graph", "events" or "wall", one per callable
    device: DeviceInfo
    config: TimingConfig
    refill: Callable[[], None]
    clock: Clock = REAL_CLOCK


def stage(fns: Sequence[Callable[[], object]], device: DeviceInfo,
          config: TimingConfig | None = None,
          refill: Callable[[], None] | None = None,
          clock: Clock = REAL_CLOCK) -> Staged:
    """Runs each callable `config.warmup_runs` times (`refill` before every call), then, on a
    GPU with `use_graphs`, captures it in a CUDA graph where it can be captured. A runnable
    returns what its callable returned (a replay: the outputs of the captured call)."""
    refill = refill or (lambda: None)
    interpreted = device.backend == "interpreter"
    config = config or (INTERPRETER_TIMING if interpreted else TimingConfig())
    runnables, methods = [], []
    with phase("prepare", clock):
        for fn in fns:
            for _ in range(config.warmup_runs):
                refill()
                fn()
            method = "wall" if interpreted else "events"
            if config.use_graphs and not interpreted:
                fn, captured = _as_graph(fn, clock.device())
                method = "graph" if captured else method
            runnables.append(fn)
            methods.append(method)
    return Staged(runnables, methods, device, config, refill, clock)


def time_staged(staged: Staged, give_up_above_us: Sequence[float | None] | None = None,
                floors_us: Sequence[tuple[float, float] | None] | None = None,
                peak_mhz: float = 0.0) -> list[LatencyStats]:
    """Returns the latency of each staged callable, timed interleaved on its device.

    Per callable (None: not given): `give_up_above_us`, the latency beyond which the caller
    does not care how slow it is; its timing stops once the median is confidently above it
    (`stopped="slower"`). `floors_us`, its work's (compute us, memory us) at the device's
    peaks (`case_floors_us`), says whether a long one must settle as `heavy`. `peak_mhz` is
    the fastest SM clock the caller knows of lately on this device (0: unknown): a process
    that has read none itself would take whatever clock it finds for the peak, one perhaps
    still climbing back after another's heavy load (evidence: RESULTS.md#timing-clock-recovery).
    """
    give_up, floors = _per_callable(len(staged.runnables), give_up_above_us, floors_us)
    if staged.device.backend == "interpreter":
        return _time_wall(staged, give_up)
    return _time_events(staged, give_up, floors, peak_mhz)


def bench(fns: Sequence[Callable[[], object]], device: DeviceInfo,
          config: TimingConfig | None = None,
          refill: Callable[[], None] | None = None,
          give_up_above_us: Sequence[float | None] | None = None,
          floors_us: Sequence[tuple[float, float] | None] | None = None,
          clock: Clock = REAL_CLOCK) -> list[LatencyStats]:
    """Returns the latency of each callable, staged and timed at once (see `stage` and
    `time_staged`); `refill`, when given, runs before every call (warm-up and timed), untimed."""
    _per_callable(len(fns), give_up_above_us, floors_us)  # before any call
    return time_staged(stage(fns, device, config, refill, clock=clock), give_up_above_us,
                       floors_us)


def _per_callable(count: int, give_up_above_us, floors_us) -> tuple[list, list]:
    """Returns both per-callable lists (None entries where not given), or raises ValueError
    when one has not `count` entries."""
    give_up = list(give_up_above_us) if give_up_above_us is not None else [None] * count
    floors = list(floors_us) if floors_us is not None else [None] * count
    if len(give_up) != count or len(floors) != count:
        raise ValueError(f"give_up_above_us and floors_us need {count} entries, one per "
                         f"callable; got {len(give_up)} and {len(floors)}")
    return give_up, floors


def _time_wall(staged: Staged, give_up) -> list[LatencyStats]:
    """Warm-up rounds of what will be timed, as `_time_events` has (a cache a callable
    fills on the first call after its staging misses there, not in a timed run), then
    adaptive batches timed with the wall clock."""
    runnables, refill, now = staged.runnables, staged.refill, staged.clock.now
    with phase("warm", staged.clock):
        for _ in range(max(staged.config.warmup_runs, 1)):
            for fn in runnables:
                refill()
                fn()

    def run_batch(active: list[int], runs: int) -> list[list[float]]:
        samples: list[list[float]] = [[] for _ in active]
        for _ in range(runs):
            for index, bucket in zip(active, samples):
                refill()
                start = now()
                runnables[index]()
                bucket.append((now() - start) * 1e6)
        return samples

    return time_adaptively(run_batch, len(runnables), staged.config, give_up, staged.methods)


def bind_clocks() -> None:
    """Binds `REAL_CLOCK`'s GPU functions now (the worker calls this before any candidate)."""
    with contextlib.suppress(ImportError, AttributeError):
        REAL_CLOCK.device()


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
            outputs = fn()

        def replay():
            graph.replay()
            return outputs

        return replay, True
    except Exception:  # capture is an optimisation; eager timing is still correct
        gpu.synchronize()
        return fn, False


_SPIN_CYCLES = 1_000_000  # about 0.5 ms at a 2-GHz boost clock
_PAD_SLACK_US = 10.0
_PAD_CAP_US = 500.0


def _clock_mhz(clock: Clock, cycles: int = _SPIN_CYCLES) -> float | None:
    """Returns the SM clock now, in MHz (None: no spin kernel), remembered in `clock.recent`: a
    spin of `cycles` timed with events, behind a lead spin that keeps the GPU busy while the
    host enqueues the timed one. Both are long: right after a synchronisation the host may take
    longer than a short lead to enqueue (evidence: RESULTS.md#timing-clock-read)."""
    gpu = clock.device()
    if gpu.sleep is None:
        return None
    start, end = gpu.event(enable_timing=True), gpu.event(enable_timing=True)
    gpu.sleep(cycles // 4)
    gpu.record(start)
    gpu.sleep(cycles)
    gpu.record(end)
    gpu.synchronize()
    mhz = cycles / max(gpu.elapsed_ms(start, end) * 1e3, 1e-3)
    clock.recent.note(clock.now(), mhz)
    return mhz


def read_clock_mhz(device: DeviceInfo, clock: Clock = REAL_CLOCK) -> float | None:
    """Returns the SM clock of `device` now, in MHz (`_clock_mhz`); None where unreadable."""
    return None if device.backend == "interpreter" else _clock_mhz(clock)


def flush_bytes(device) -> int:
    """Bytes whose write flushes `device`'s last-level cache (twice it, 64 MiB at least)."""
    return max(2 * device.llc_bytes, 64 << 20)


def _time_events(staged: Staged, give_up, floors, peak_mhz: float) -> list[LatencyStats]:
    """Warm-up rounds of what will be timed (a graph's first replay uploads it; the rounds
    also measure the host's enqueue time), settling batches (`settling`, which waits out a
    clock that is down), then adaptive batches of event-timed runs, each behind a pad: a
    spin kernel twice as long as the host takes to enqueue the call, so the whole call is
    queued before its start event fires and the interval holds GPU work, never launcher
    jitter. The last-level cache is flushed before every run."""
    clock, device, config = staged.clock, staged.device, staged.config
    gpu = clock.device()
    runnables, refill = staged.runnables, staged.refill
    flush = gpu.torch.empty(flush_bytes(device), dtype=gpu.torch.int8, device=device.torch_device)
    with phase("warm", clock):
        host_us: list[list[float]] = [[] for _ in runnables]
        for _ in range(max(config.warmup_runs, 1)):
            for fn, spent in zip(runnables, host_us):
                refill()
                flush.zero_()
                enqueued = clock.now()
                fn()
                spent.append((clock.now() - enqueued) * 1e6)
            gpu.synchronize()
        clock_mhz = _clock_mhz(clock)
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

    settled_batch = settling(run_batch, lambda: _clock_mhz(clock), clock_mhz, config, floors,
                             peak_mhz, clock)
    return time_adaptively(settled_batch, len(runnables), config, give_up, staged.methods, floors)


def roofline_fraction(device: DeviceInfo, flops: float, bytes_moved: float,
                      latency_us: float, dtype: str = "float32") -> float | None:
    """Returns (fastest possible time) / (measured time), 1.0 at the roofline; None when the
    device's peaks are unknown or the run was not on a GPU."""
    if not device.timing_meaningful or latency_us <= 0:
        return None
    floor_s = device.roofline_s(flops, bytes_moved, dtype)
    return None if floor_s is None else floor_s / (latency_us * 1e-6)


def case_floors_us(device: DeviceInfo, flops_fn, bytes_fn,
                   params: Mapping) -> tuple[float, float] | None:
    """Returns (compute us, memory us) of one case at the device's peaks, from the task's
    formulas: what `heavy` weighs a timed median against. None when unknown."""
    if flops_fn is None or bytes_fn is None:
        return None
    parts = device.roofline_parts_s(float(flops_fn(params)), float(bytes_fn(params)),
                                    str(params.get("dtype", "float32")))
    return None if parts is None else (parts[0] * 1e6, parts[1] * 1e6)


def case_roofline(device: DeviceInfo, flops_fn, bytes_fn, params: Mapping,
                  latency_us: float) -> float | None:
    """Returns the roofline fraction of one case from the task's formulas."""
    if flops_fn is None or bytes_fn is None:
        return None
    return roofline_fraction(device, float(flops_fn(params)), float(bytes_fn(params)),
                             latency_us, str(params.get("dtype", "float32")))
