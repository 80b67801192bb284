"""The rules of adaptive timing, as pure functions of the samples (when to stop, when the clock
has settled, how many runs come next) and the window of recent clock reads settling weighs a
clock against. `fitness.measure.timing` runs the kernels; these decide, tested without a GPU."""

from __future__ import annotations

import collections
import dataclasses
import functools
import statistics
import threading
from typing import Sequence


@dataclasses.dataclass(frozen=True)
class TimingConfig:
    """How long to warm up and when to stop timing. A callable is `heavy` when it is long
    enough and draws enough power to move the SM clock itself: it settles on its own load, a
    light one waits for the chip's full clock (`settled`).

    Each field's reason is the string below it.
    """

    warmup_runs: int = 3
    """Untimed calls of each callable (compilation, autotuning, caches), and as many untimed
    rounds after graph capture (a graph's first replay uploads it)."""
    min_runs: int = 20
    """Timed runs before any stop: at 20 the median's 95% interval is the 6th to 15th sample,
    so one outlier cannot stop it."""
    max_runs: int = 500
    """Timed runs at most."""
    max_timed_s: float = 0.05
    """Timed work at most (the sum of the runs, s): a slow kernel stops here after `min_runs`."""
    ci_rel: float = 0.005
    """Stop once the median's confidence interval is narrower than this fraction of it on each
    side: sampling then moves three timings of a kernel about 1% apart, half the 2% that
    repeated timings may differ by. 0 never stops on it."""
    confidence: float = 0.95
    """Confidence of that interval, and of the "clearly slower" call."""
    use_graphs: bool = True
    """Time CUDA graph replays where the call can be captured: events around an eager launch
    time Triton's host-side launcher, not the kernel (evidence: RESULTS.md#timing-graph-replay)."""
    settle_above_us: float = 200.0
    """A batch median at least this long may move the clock itself (behind the flush and the
    pad it keeps the GPU busy most of the time); below it only the SM clock must be steady."""
    heat_compute_fraction: float = 0.25
    """Such a callable with known roofline floors (`bench`'s `floors_us`) is heavy only at a
    compute rate of at least this fraction of the peak, or memory traffic of at least
    `heat_memory_fraction` of the bandwidth; others barely move the clock and settle like
    light ones (evidence: RESULTS.md#timing-heat-fractions)."""
    heat_memory_fraction: float = 0.7
    """The memory-traffic fraction of the bandwidth that makes a callable heavy (see
    `heat_compute_fraction`)."""
    heavy_min_timed_s: float = 0.1
    """Timed work of a heavy callable at least: under the power limiter the clock wanders from
    read to read, and a tight interval over a few milliseconds times one point of that
    wander (evidence: RESULTS.md#timing-clock-wander)."""
    settle_min_s: float = 0.15
    """Seconds of a heavy callable's settling batches before it may be timed: the power limiter
    pulls a boost clock down only after a while under load
    (evidence: RESULTS.md#timing-power-limiter)."""
    settle_max_s: float = 0.3
    """Settling stops after this many seconds, settled or not (0: the first batch is timed)."""
    settle_batch_s: float = 0.02
    """Seconds a settling batch lasts at least after the first, so that two in a row are far
    enough apart to show a drift."""
    settle_rel: float = 0.01
    """Settled once the last two batch medians (heavy callables) and clock reads agree within
    this fraction, and (light callables) the clock is within it of the fastest read lately."""
    settle_gap_s: float = 0.05
    """Heavy load that ended at most this long before a settling counts toward its
    `settle_min_s`: the cases of one candidate, timed back to back, heat the chip once."""
    drift_rel: float = 0.03
    """Runs whose first and last thirds have medians more than this fraction apart timed two
    states of the device, and their median is of neither: they are dropped and the callable
    timed again, at most `retakes` times. Not heavy callables: they drift as they heat the
    chip, which settling already spans (evidence: RESULTS.md#timing-retakes)."""
    retakes: int = 1
    """Times a drifted callable is timed again at most (see `drift_rel`)."""


INTERPRETER_TIMING = TimingConfig(warmup_runs=1, min_runs=3, max_runs=3, retakes=0)

STOP_REASONS = ("ci", "slower", "max")
"""Why timing a callable stopped: its median's interval is tight; the interval lies above the
caller's `give_up_above_us`; the run or time budget is spent."""


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
                give_up_above_us: float | None = None, min_timed_s: float = 0.0) -> str | None:
    """Returns why timing should stop after these samples (one of STOP_REASONS), or None to
    time another batch. Nothing stops before `min_runs`.

    "slower" comes first: an interval wholly above `give_up_above_us` is slower than the
    caller cares about (one-sided, at (1 + confidence) / 2), and more runs would refine a
    number nobody uses. Then "ci": the interval's half-width is under `ci_rel` of the median,
    once the runs add up to `min_timed_s`. Then "max": `max_runs` runs, or the longer of
    `max_timed_s` and `min_timed_s` of timed work.
    """
    runs = len(samples_us)
    if runs < config.min_runs:
        return None
    ordered = sorted(samples_us)
    timed_s = sum(ordered) * 1e-6
    ranks = median_ci_ranks(runs, config.confidence)
    if ranks is not None:
        low, high = ordered[ranks[0]], ordered[ranks[1]]
        if give_up_above_us is not None and low > give_up_above_us:
            return "slower"
        if high - low < 2 * config.ci_rel * statistics.median(ordered) and timed_s >= min_timed_s:
            return "ci"
    if runs >= config.max_runs or timed_s >= max(config.max_timed_s, min_timed_s):
        return "max"
    return None


def drifted(samples_us: Sequence[float], config: TimingConfig) -> bool:
    """Returns whether the runs (in the order they ran) drifted: the medians of the first and
    the last third more than `drift_rel` apart. Thirds, not halves: a step a fifth of the way
    in already slows the first half's median (evidence: RESULTS.md#timing-drift-thirds). Too
    few runs for two medians of `min_runs // 3` each never drift."""
    third = len(samples_us) // 3
    if third < max(config.min_runs // 3, 1):
        return False
    first, last = statistics.median(samples_us[:third]), statistics.median(samples_us[-third:])
    return abs(first - last) > config.drift_rel * min(first, last)


def heavy(median_us: float, floors_us: tuple[float, float] | None,
          config: TimingConfig) -> bool:
    """Returns whether a callable at this median may move the clock itself: at least
    `settle_above_us`, and, where its roofline floors (compute us, memory us) are known,
    at least `heat_compute_fraction` of the peak rate or `heat_memory_fraction` of the
    bandwidth."""
    if median_us < config.settle_above_us:
        return False
    if floors_us is None:
        return True
    compute_us, memory_us = floors_us
    return (compute_us >= config.heat_compute_fraction * median_us
            or memory_us >= config.heat_memory_fraction * median_us)


def settled(medians_us: Sequence[Sequence[float]], clocks_mhz: Sequence[float],
            elapsed_s: float, config: TimingConfig, loaded_s: float = 0.0,
            peak_mhz: float = 0.0,
            floors_us: Sequence[tuple[float, float] | None] = ()) -> bool:
    """Returns whether timing may begin after these settling batches: `medians_us` holds each
    callable's batch medians (oldest first), `clocks_mhz` the SM clock read before the first
    batch and after each (empty: unreadable), `elapsed_s` the seconds since the first began,
    `loaded_s` the heavy load just before it (`settle_gap_s`), `peak_mhz` the fastest clock
    read lately (0: unknown), `floors_us` each callable's roofline floors (see `heavy`).

    Always after `settle_max_s`; else the clock must have moved under `settle_rel` since the
    last read. With no `heavy` callable it must also be within `settle_rel` of `peak_mhz`: a
    light kernel's honest state is the full clock, which climbs back after heavy load in
    steps, so two agreeing reads may be a step (evidence: RESULTS.md#timing-clock-recovery).
    With one, `settle_min_s` of heavy load must have passed (a boost clock holds before the
    limiter pulls it down) and each callable's last two medians agree within `settle_rel`.
    """
    if elapsed_s >= config.settle_max_s:
        return True

    def steady(series: Sequence[float]) -> bool:
        return len(series) >= 2 and abs(series[-1] - series[-2]) <= config.settle_rel * series[-2]

    if len(clocks_mhz) >= 2 and not steady(clocks_mhz):
        return False
    floors = list(floors_us) + [None] * (len(medians_us) - len(floors_us))
    if any(heavy(series[-1], floor, config) for series, floor in zip(medians_us, floors)):
        return elapsed_s + loaded_s >= config.settle_min_s and all(steady(series) for series in medians_us)
    return not clocks_mhz or clocks_mhz[-1] >= (1.0 - config.settle_rel) * peak_mhz


def next_batch_runs(done: int, config: TimingConfig) -> int:
    """Returns how many runs the next batch adds: `min_runs`, then half of those done (up to
    `max_runs`): one synchronisation per growth step, at most a third more runs than needed."""
    if done < config.min_runs:
        return config.min_runs - done
    return max(1, min(done // 2, config.max_runs - done))


class ClockWindow:
    """The SM clock reads of the last `window_s` seconds; their fastest (`peak`) is the clock a
    light kernel waits for (`settled`). A window, so a chip that runs hotter later is not held
    to its cool boost. Thread-safe: the judge notes the checkers' reads from many walks."""

    def __init__(self, window_s: float = 60.0):
        self.window_s = window_s
        self._reads: collections.deque[tuple[float, float]] = collections.deque()  # (s, MHz)
        self._lock = threading.Lock()

    def note(self, now_s: float, mhz: float) -> None:
        with self._lock:
            self._reads.append((now_s, mhz))
            self._forget(now_s)

    def peak(self, now_s: float) -> float:
        """Returns the fastest read of the window ending at `now_s` (0.0: none)."""
        with self._lock:
            self._forget(now_s)
            return max((mhz for _, mhz in self._reads), default=0.0)

    def _forget(self, now_s: float) -> None:
        while self._reads and self._reads[0][0] < now_s - self.window_s:
            self._reads.popleft()
