"""Adaptive timing: the stop rule on synthetic sample streams, and bench() on the wall clock."""

import itertools
import random
import statistics
import time
import types

import pytest

from fitness.measure import timing
from fitness.device import DeviceInfo
from fitness.judge import timing_report

CONFIG = timing.TimingConfig(min_runs=20, max_runs=300, max_timed_s=10.0, ci_rel=0.005,
                             retakes=0)  # the stop rule alone; retakes are tested on their own
RETAKING = timing.TimingConfig(min_runs=20, max_runs=300, max_timed_s=10.0, ci_rel=0.005)


def stream(seed: int, draw):
    """Returns an endless sample stream (us): draw(rng) per sample."""
    rng = random.Random(seed)
    return (draw(rng) for _ in itertools.count())


def tight(rng):
    return 100.0 * (1 + rng.uniform(-0.001, 0.001))


def noisy(rng):
    return rng.uniform(50.0, 150.0)


def feeder(*streams):
    """Returns run_batch over synthetic streams, and the log of (active, runs) it was asked."""
    asked = []

    def run_batch(active, runs):
        asked.append((tuple(active), runs))
        return [[next(streams[index]) for _ in range(runs)] for index in active]

    return run_batch, asked


def timed(*streams, config=CONFIG, give_up=None):
    run_batch, asked = feeder(*streams)
    stats = timing.time_adaptively(run_batch, len(streams), config,
                                   give_up or [None] * len(streams), ["graph"] * len(streams))
    return stats, asked


def test_median_interval_ranks_match_the_binomial_table():
    # 1-based textbook ranks: n=10 -> (2, 9), n=20 -> (6, 15), n=100 -> (40, 61)
    assert timing.median_ci_ranks(10, 0.95) == (1, 8)
    assert timing.median_ci_ranks(20, 0.95) == (5, 14)
    assert timing.median_ci_ranks(100, 0.95) == (39, 60)
    assert timing.median_ci_ranks(5, 0.95) is None  # even min..max misses 1 time in 16
    assert timing.median_ci_ranks(6, 0.95) == (0, 5)


def test_median_interval_covers_the_median_of_a_skewed_distribution():
    rng, runs, trials = random.Random(7), 30, 4000
    lo, hi = timing.median_ci_ranks(runs, 0.95)
    covered = 0
    for _ in range(trials):
        ordered = sorted(rng.lognormvariate(0.0, 1.0) for _ in range(runs))  # median 1
        covered += ordered[lo] <= 1.0 <= ordered[hi]
    # exact coverage of ranks 10..21 of 30 is 95.7%; the margin is the simulation's error
    assert 0.945 <= covered / trials <= 0.97


def test_tight_stream_stops_on_its_interval_at_min_runs():
    [stats], asked = timed(stream(1, tight))
    assert (stats.stopped, stats.runs) == ("ci", 20)
    assert asked == [((0,), 20)]


def test_nothing_stops_before_min_runs_however_tight():
    samples = [100.0] * 19
    assert timing.stop_reason(samples, CONFIG) is None
    assert timing.stop_reason(samples + [100.0], CONFIG) == "ci"


def test_noisy_stream_runs_to_max_runs_in_growing_batches():
    [stats], asked = timed(stream(2, noisy))
    assert (stats.stopped, stats.runs) == ("max", 300)
    sizes = [runs for _, runs in asked]
    assert sizes[:3] == [20, 10, 15] and sum(sizes) == 300


def test_clearly_slower_stream_stops_early_with_the_median_of_its_real_runs():
    samples = []

    def slow(rng):
        samples.append(rng.uniform(180.0, 260.0))  # as noisy as `noisy`, but above 150
        return samples[-1]

    [stats], _ = timed(stream(3, slow), give_up=[150.0])
    assert (stats.stopped, stats.runs) == ("slower", 20)
    assert stats.median_us == statistics.median(samples) and stats.median_us > 150.0


def test_a_stream_slower_only_in_its_tail_is_not_given_up():
    def tail(rng):
        return rng.uniform(300.0, 400.0) if rng.random() < 0.3 else rng.uniform(90.0, 110.0)

    [stats], _ = timed(stream(4, tail), give_up=[150.0])
    assert stats.stopped != "slower" and stats.median_us < 150.0


def test_timed_work_cap_stops_a_slow_kernel_after_min_runs():
    config = timing.TimingConfig(min_runs=20, max_runs=500, max_timed_s=0.05, ci_rel=0.005)
    [stats], _ = timed(stream(5, lambda rng: rng.uniform(5_000.0, 15_000.0)), config=config)
    assert (stats.stopped, stats.runs) == ("max", 20)  # 20 runs of ~10 ms: over 0.05 s


def test_a_heavy_kernel_is_timed_for_heavy_min_timed_s_however_tight():
    """268 us at 52% of the peak rate (matmul 4096^3 on an H200): a tight interval after 20
    runs (5 ms) is not enough; it stops on "ci" once 0.1 s of runs add up. The same
    latency at 10% of the peak stops at once."""
    samples = [268.0 + 0.1 * (i % 3) for i in range(400)]
    assert timing.stop_reason(samples[:20], timing.TimingConfig(), min_timed_s=0.1) is None
    assert timing.stop_reason(samples[:374], timing.TimingConfig(), min_timed_s=0.1) == "ci"
    assert timing.stop_reason(samples[:20], timing.TimingConfig()) == "ci"

    def runs(floors):
        bucket = itertools.cycle(samples)

        def run_batch(active, count):
            return [[next(bucket) for _ in range(count)] for _ in active]

        [stats] = timing.time_adaptively(run_batch, 1, timing.TimingConfig(), [None],
                                         ["events"], floors_us=[floors])
        return stats.runs, stats.stopped

    tensor_core, far_from_it = (139.0, 20.0), (27.0, 20.0)
    assert runs(tensor_core)[1] == "ci" and runs(tensor_core)[0] * 268.0e-6 >= 0.1
    assert runs(far_from_it) == (20, "ci")


def test_a_zero_ci_target_never_stops_on_the_interval():
    config = timing.TimingConfig(min_runs=30, max_runs=60, max_timed_s=10.0, ci_rel=0.0)
    [stats], _ = timed(stream(6, lambda rng: 10.0), config=config)  # identical samples
    assert (stats.stopped, stats.runs) == ("max", 60)


def test_interleaved_callables_stop_independently():
    stats, asked = timed(stream(8, tight), stream(9, noisy), stream(10, lambda rng: 3 * noisy(rng)),
                         give_up=[None, None, 200.0])
    assert [(s.stopped, s.runs) for s in stats] == [("ci", 20), ("max", 300), ("slower", 20)]
    assert asked[0] == ((0, 1, 2), 20) and all(active == (1,) for active, _ in asked[1:])


def test_wall_clock_bench_gives_up_on_a_clearly_slower_callable():
    config = timing.TimingConfig(warmup_runs=1, min_runs=8, max_runs=40, retakes=0)
    calls = []
    stats = timing.bench([lambda: time.sleep(0.002), lambda: calls.append(1)],
                         DeviceInfo("interpreter", "cpu"), config, give_up_above_us=[500.0, None])
    assert (stats[0].stopped, stats[0].runs, stats[0].method) == ("slower", 8, "wall")
    assert stats[0].median_us >= 2000.0
    assert stats[1].stopped != "slower" and len(calls) == 2 + stats[1].runs  # warm-up, warm round


def test_bench_without_give_up_keeps_the_old_call_and_three_interpreter_runs():
    [stats] = timing.bench([lambda: None], DeviceInfo("interpreter", "cpu"))
    assert (stats.runs, stats.stopped) == (3, "max")


def test_give_up_and_floors_need_one_entry_per_callable():
    with pytest.raises(ValueError, match="need 2 entries, one per callable; got 1 and 2"):
        timing.bench([lambda: None] * 2, DeviceInfo("interpreter", "cpu"), give_up_above_us=[1.0])
    with pytest.raises(ValueError, match="got 2 and 3"):
        timing.bench([lambda: None] * 2, DeviceInfo("interpreter", "cpu"),
                     floors_us=[None, None, None])


def test_a_screened_candidate_keeps_its_latencies_but_has_no_speedup():
    fast = {"median_us": 10.0, "p20_us": 9.0, "p80_us": 11.0}
    fields = timing_report.speedup_fields(
        [None, {"median_us": 40.0, "p20_us": 39.0, "p80_us": 41.0}, None],
        [fast, {**fast, "median_us": 20.0}, fast])
    assert fields["latency_us"] == (None, 40.0, None)
    assert fields["latency_p80_us"] == (None, 41.0, None)
    assert fields["ref_latency_us"] == (10.0, 20.0, 10.0)
    assert fields["speedup"] is None and fields["worst_speedup"] is None
    timed = timing_report.speedup_fields(
        [{**fast, "median_us": 5.0}, {"median_us": 40.0, "p20_us": 39.0, "p80_us": 41.0}, fast],
        [fast, {**fast, "median_us": 20.0}, fast])
    assert timed["speedup"] == pytest.approx((2.0 * 0.5 * 1.0) ** (1 / 3))
    assert timed["worst_speedup"] == 0.5


class _FakeGpu:
    """Stands in for `timing._Gpu`: a fake device clock that spin kernels and the callable
    advance, a log of what was queued, in order, and a small flush buffer. `clock` times
    on it with the host's seconds, in a process that has read no SM clock."""

    def __init__(self, mhz: float):
        import torch

        small = torch.empty(64, dtype=torch.int8)
        self.torch = types.SimpleNamespace(int8=torch.int8, empty=lambda *shape, **kw: small)
        self.mhz, self.now_us, self.log = mhz, 0.0, []
        self.clock = timing.Clock(now=time.perf_counter, gpu=self)

    def gpu_time_clock(self, *reads_mhz: float) -> timing.Clock:
        """Returns a Clock whose host seconds are this GPU's time (the host waits on every
        call) and that has read these SM clocks lately."""
        return timing.Clock(now=lambda: self.now_us * 1e-6, gpu=self,
                            recent=read_lately(*reads_mhz))

    def event(self, enable_timing: bool):
        return {}

    def record(self, event):
        event["at_us"] = self.now_us
        self.log.append("record")

    def elapsed_ms(self, start, end):
        return (end["at_us"] - start["at_us"]) / 1e3

    def synchronize(self):
        pass

    def sleep(self, cycles: int):
        self.now_us += cycles / self.mhz
        self.log.append(("spin", cycles))

    def kernel(self):
        self.now_us += 5.0
        self.log.append("kernel")


_FAKE_DEVICE = DeviceInfo("cuda", "fake", llc_bytes=1 << 20)
_EVENTS = timing.TimingConfig(warmup_runs=2, use_graphs=False)


@pytest.fixture
def fake_gpu() -> _FakeGpu:
    """A _FakeGpu at 1980 MHz."""
    return _FakeGpu(mhz=1980.0)


def test_event_path_pads_each_run_behind_one_clock_read_after_counted_warm_up(fake_gpu):
    gpu, device, config = fake_gpu, _FAKE_DEVICE, _EVENTS
    clock_read = ("spin", timing._SPIN_CYCLES)

    def bench(clock: timing.Clock):
        """Returns the stats, the untimed runs and the clock reads before the first pad, the
        timed log entries, and what came after."""
        gpu.log.clear()
        [stats] = timing.bench([gpu.kernel], device, config, clock=clock)
        reads = (clock_read[1], clock_read[1] // 4)
        first_pad = next(i for i, entry in enumerate(gpu.log)
                         if entry[0] == "spin" and entry[1] not in reads)
        return (stats, gpu.log[:first_pad], gpu.log[first_pad:first_pad + 80],
                gpu.log[first_pad + 80:])

    stats, before, timed, after = bench(gpu.clock)
    assert (stats.median_us, stats.runs, stats.stopped, stats.method) == (5.0, 20, "ci", "events")
    assert before.count("kernel") == 2 * config.warmup_runs  # calls, then rounds that time the host
    assert before.count(clock_read) == 1 and before[-2] == clock_read  # read last, before the pads
    assert all(entry[0] == "spin" for entry in timed[0::4]) and timed[1::4] == ["record"] * 20
    assert timed[2::4] == ["kernel"] * 20 and timed[3::4] == ["record"] * 20
    assert min(entry[1] for entry in timed[0::4]) >= 1980 * 10  # >= 10 us at the clock read
    assert after.count(clock_read) == 1 and "kernel" not in after  # one read: the clock held

    gpu.mhz = 600.0  # far below the clock read lately, and it stays there
    stats, _, _, after = bench(gpu.gpu_time_clock(1980.0))  # settle_max_s of the GPU's time,
    # not of a slow host's: batches of settle_batch_s until settle_max_s
    batches = int(config.settle_max_s / config.settle_batch_s)
    assert after.count(clock_read) >= batches - 2 and after.count("kernel") > 20
    assert stats.median_us == 5.0 and stats.stopped == "ci"


def test_a_timing_accounts_its_seconds_by_phase(fake_gpu):
    first, second = {}, {}
    with timing.accounted(first):
        timing.bench([fake_gpu.kernel], _FAKE_DEVICE, _EVENTS, clock=fake_gpu.clock)
    fake_gpu.mhz = 600.0  # the clock is down: the light kernel settles until settle_max_s
    with timing.accounted(second):
        timing.bench([fake_gpu.kernel], _FAKE_DEVICE, _EVENTS, clock=fake_gpu.clock)

    assert {"prepare", "warm", "settle", "timed", "all"} <= set(first) and "buffers" not in first
    assert first["all"] >= first["prepare"] + first["warm"] + first["settle"] + first["timed"]
    assert first["settle"] < 0.01 <= second["settle"]


def test_staging_warms_up_apart_and_timing_runs_only_what_was_staged(fake_gpu):
    staging, timed = {}, {}
    with timing.accounted(staging):
        staged = timing.stage([fake_gpu.kernel], _FAKE_DEVICE, _EVENTS, clock=fake_gpu.clock)
    assert fake_gpu.log == ["kernel"] * _EVENTS.warmup_runs  # warm-up calls, nothing timed
    fake_gpu.log.clear()
    with timing.accounted(timed):
        [stats] = timing.time_staged(staged)

    assert "prepare" in staging and not {"warm", "settle", "timed"} & set(staging)
    assert "prepare" not in timed and {"warm", "timed"} <= set(timed)
    # the timing starts with the warm rounds that measure the host, not with warm-up calls
    assert fake_gpu.log[:2] == ["kernel", "kernel"] and stats.runs == 20
    assert (stats.method, stats.stopped) == ("events", "ci")
    with pytest.raises(ValueError, match="need 1 entries"):
        timing.time_staged(staged, give_up_above_us=[None, None])


SETTLE = timing.TimingConfig(settle_above_us=200.0, settle_min_s=0.15, settle_max_s=0.3,
                             settle_rel=0.01)


def test_a_short_kernel_at_a_steady_clock_is_timed_from_its_first_batch():
    assert timing.settled([[50.0]], [1980.0, 1975.0], 0.002, SETTLE)
    assert timing.settled([[50.0]], [], 0.002, SETTLE)  # no clock reading (no spin kernel)


def test_a_short_kernel_waits_for_the_clock_to_climb_back_to_the_peak():
    """After another caller's heavy load the clock climbs back in steps: two agreeing reads
    on a step are not enough for a light kernel, the peak read lately is."""
    assert not timing.settled([[50.0, 50.0]], [1464.0, 1463.0], 0.05, SETTLE, peak_mhz=1975.0)
    assert timing.settled([[50.0, 50.0]], [1960.0, 1962.0], 0.05, SETTLE, peak_mhz=1975.0)
    assert timing.settled([[50.0]], [1464.0, 1463.0], 0.3, SETTLE, peak_mhz=1975.0)
    heavy = [[2210.0, 2212.0]]  # a heavy kernel holds its own clock down: no peak to reach
    assert timing.settled(heavy, [1464.0, 1463.0], 0.2, SETTLE, peak_mhz=1975.0)


def test_a_moving_clock_is_not_settled_whatever_the_kernel():
    assert not timing.settled([[50.0]], [1735.0, 1830.0], 0.05, SETTLE)  # recovering
    assert not timing.settled([[50.0, 50.0]], [1980.0, 1980.0, 1900.0], 0.05, SETTLE)
    assert timing.settled([[50.0, 50.0]], [1735.0, 1830.0, 1840.0], 0.05, SETTLE)


def test_a_heavy_kernel_steady_at_boost_is_not_settled_before_settle_min_s():
    boost = [[1945.0, 1946.0, 1945.0]]
    assert not timing.settled(boost, [1980.0] * 4, 0.12, SETTLE)
    assert timing.settled(boost, [1980.0] * 4, 0.16, SETTLE)


def test_a_heavy_kernel_whose_latency_steps_is_not_settled_until_two_batches_agree():
    assert not timing.settled([[1945.0, 1950.0, 2210.0]], [1980.0, 1980.0, 1750.0, 1740.0],
                              0.2, SETTLE)
    assert timing.settled([[1945.0, 2210.0, 2218.0]], [1980.0, 1750.0, 1740.0], 0.2, SETTLE)


def test_a_long_kernel_that_draws_little_power_settles_like_a_light_one():
    """400 us at 10% of the peak rate and 50% of the bandwidth (a row reduction, a matmul
    far from its roofline) does not pull the clock down: the clock at its peak is enough.
    At 50% of the peak rate, or 85% of the bandwidth, it is heavy."""
    steady = [[400.0, 430.0]]  # batch medians that do not agree: only a heavy kernel cares
    assert timing.settled(steady, [1975.0, 1972.0], 0.02, SETTLE, peak_mhz=1975.0,
                          floors_us=[(40.0, 200.0)])
    assert not timing.settled(steady, [1975.0, 1972.0], 0.02, SETTLE, peak_mhz=1975.0,
                              floors_us=[(200.0, 40.0)])
    assert not timing.settled(steady, [1975.0, 1972.0], 0.02, SETTLE, peak_mhz=1975.0,
                              floors_us=[(10.0, 340.0)])
    assert not timing.settled(steady, [1975.0, 1972.0], 0.02, SETTLE, peak_mhz=1975.0)  # unknown
    assert not timing.settled(steady, [1400.0, 1401.0], 0.02, SETTLE, peak_mhz=1975.0,
                              floors_us=[(40.0, 200.0)])  # light: waits for the peak


def test_one_heavy_callable_holds_back_a_light_one_interleaved_with_it():
    assert not timing.settled([[20.0, 20.0], [400.0, 420.0]], [], 0.2, SETTLE)
    assert not timing.settled([[20.0, 20.0], [400.0, 401.0]], [], 0.1, SETTLE)
    assert timing.settled([[20.0, 20.0], [400.0, 401.0]], [], 0.2, SETTLE)


def test_heavy_load_just_before_counts_toward_settle_min_s_but_two_batches_must_agree():
    boost = [[1945.0, 1946.0]]
    assert not timing.settled(boost, [1980.0] * 3, 0.02, SETTLE)
    assert timing.settled(boost, [1980.0] * 3, 0.02, SETTLE, loaded_s=0.15)
    assert not timing.settled([[1945.0]], [1980.0] * 2, 0.02, SETTLE, loaded_s=0.15)
    assert not timing.settled([[1945.0, 2210.0]], [1980.0] * 3, 0.02, SETTLE, loaded_s=0.15)


def test_settling_stops_at_settle_max_s_and_never_with_settle_max_s_zero():
    assert timing.settled([[1945.0, 2210.0]], [1980.0, 1750.0], 0.3, SETTLE)
    no_settling = timing.TimingConfig(settle_max_s=0.0)
    assert timing.settled([[1945.0]], [1980.0, 600.0], 0.0, no_settling)


def test_a_heavy_kernel_is_timed_only_after_the_power_limiter_has_pulled_its_clock_down():
    """A 2 ms kernel runs at boost (1945 us) for its first 0.1 s of (fake) GPU time, then at
    the limited clock (2210 us): settled, every timed run is from after the step; without
    settling, the timing is the boost's."""
    device = DeviceInfo("cuda", "fake", llc_bytes=1 << 20)

    def bench(**settle):
        gpu = _FakeGpu(mhz=1980.0)

        def matmul():
            gpu.now_us += 1945.0 if gpu.now_us < 100_000.0 else 2210.0
            gpu.log.append("kernel")

        config = timing.TimingConfig(warmup_runs=2, use_graphs=False, **settle)
        [stats] = timing.bench([matmul], device, config, clock=gpu.gpu_time_clock(1980.0))
        return stats, gpu.now_us * 1e-6

    stats, spent_s = bench()
    assert (stats.median_us, stats.p20_us, stats.stopped) == (2210.0, 2210.0, "ci")
    assert stats.runs * 2210.0e-6 >= 0.1  # heavy_min_timed_s of timed runs
    assert 0.15 + 0.1 <= spent_s <= 0.3 + 0.15  # settle_min_s .. settle_max_s, then the runs
    stats, spent_s = bench(settle_max_s=0.0, heavy_min_timed_s=0.0)
    assert (stats.median_us, stats.stopped) == (1945.0, "ci") and spent_s < 0.06


def test_the_second_heavy_case_of_a_candidate_settles_on_the_load_of_the_first():
    """Two heavy cases of one caller timed back to back: the first pays `settle_min_s`, the
    second only its two agreeing batches; after a pause longer than `settle_gap_s`, or for
    another caller's kernel, it is paid again."""
    device = DeviceInfo("cuda", "fake", llc_bytes=1 << 20)
    gpu = _FakeGpu(mhz=1980.0)
    clock = gpu.gpu_time_clock(1980.0)
    config = timing.TimingConfig(warmup_runs=2, use_graphs=False)

    def matmul():
        gpu.now_us += 2210.0

    def spent_s() -> float:
        began = gpu.now_us
        timing.bench([matmul], device, config, clock=clock)
        return (gpu.now_us - began) * 1e-6

    with timing.one_callers_cases():
        first, second = spent_s(), spent_s()
        gpu.now_us += 1e6  # a second of idle device
        third = spent_s()
    unrelated = spent_s()  # another caller's kernel right after: no carry-over
    assert first >= config.settle_min_s and third >= config.settle_min_s
    assert second < first - 0.05
    assert unrelated >= config.settle_min_s


def test_a_light_kernel_after_heavy_load_is_timed_once_the_clock_is_back():
    """The clock reads 1400 MHz for 80 ms of (fake) GPU time, then the 1975 MHz read before
    (the peak): a light kernel that runs slower at the low clock is timed only on runs from
    after the climb; without settling, its first batch is the slow one. The peak is the
    process's own reads, or what its caller passes (`peak_mhz`)."""
    device = DeviceInfo("cuda", "fake", llc_bytes=1 << 20)

    class Recovering(_FakeGpu):
        @property
        def mhz(self):
            return 1400.0 if self.now_us < 80_000.0 else 1975.0

        @mhz.setter
        def mhz(self, value):
            pass

    def bench(process_reads=(1975.0,), peak_mhz=0.0, **settle):
        gpu = Recovering(mhz=0.0)

        def add():
            gpu.now_us += 30.0 if gpu.now_us < 80_000.0 else 28.0

        config = timing.TimingConfig(warmup_runs=2, use_graphs=False, **settle)
        staged = timing.stage([add], device, config, clock=gpu.gpu_time_clock(*process_reads))
        [stats] = timing.time_staged(staged, peak_mhz=peak_mhz)
        return stats, gpu.now_us * 1e-6

    stats, spent_s = bench()
    assert stats.median_us == stats.p20_us == 28.0 and spent_s >= 0.08
    stats, spent_s = bench(settle_max_s=0.0)
    assert stats.median_us == 30.0 and spent_s < 0.08
    # a process that has read no clock lately (new, or idle for a minute) takes the 1400 MHz
    # it finds for the peak and times the slow state, unless the caller says what the peak is
    stats, _ = bench(process_reads=())
    assert stats.median_us == 30.0
    stats, spent_s = bench(process_reads=(), peak_mhz=1975.0)
    assert stats.median_us == stats.p20_us == 28.0 and spent_s >= 0.08


def test_a_candidate_that_patches_time_later_does_not_move_the_real_clock(monkeypatch):
    """The real clock's host function is bound when timing is imported, before any candidate."""
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert timing.REAL_CLOCK.now is not time.perf_counter and timing.REAL_CLOCK.now() > 0.0
    assert timing.Staged([], [], _FAKE_DEVICE, _EVENTS, lambda: None).clock is timing.REAL_CLOCK


def read_lately(*mhz: float) -> timing.ClockWindow:
    """Returns a window holding these clock reads, taken at time 0."""
    window = timing.ClockWindow()
    for read in mhz:
        window.note(0.0, read)
    return window


def test_the_clock_window_keeps_the_fastest_read_of_its_last_seconds():
    window = timing.ClockWindow(window_s=60.0)
    assert window.peak(0.0) == 0.0  # nothing read: unknown
    window.note(0.0, 1980.0)
    window.note(30.0, 1500.0)
    assert window.peak(59.0) == 1980.0
    assert window.peak(61.0) == 1500.0  # the boost read is a minute old: a hotter chip now
    assert window.peak(91.0) == 0.0


def test_runs_that_drift_between_thirds_are_dropped_and_timed_again_once():
    """A timing whose runs step from one level to another partway (a clock step, a
    neighbour's launch) is taken again; the retake's runs alone make the median."""
    steps = iter([100.0] * 8 + [128.0] * 200)  # 8 fast runs, then the device slowed down
    [retaken], asked = timed(steps, config=RETAKING)
    assert retaken.stopped == "ci" and retaken.p20_us == retaken.median_us == 128.0
    # 30 runs stop on the interval (22 slow ones), drift, and are dropped; 20 new runs
    assert asked == [((0,), 20), ((0,), 10), ((0,), 20)]
    assert timing.drifted([100.0] * 8 + [128.0] * 12, RETAKING)
    assert not timing.drifted([100.0] * 10 + [102.9] * 10, RETAKING)  # within 3%
    assert not timing.drifted([100.0] * 4 + [128.0] * 4, RETAKING)  # too few runs to tell
    # a step a fifth of the way in: the first half's median is already slow, the first
    # third's is not
    assert timing.drifted([100.0] * 6 + [128.0] * 24, RETAKING)
    assert timing.drifted([100.0] * 24 + [128.0] * 6, RETAKING)  # and four fifths in
    assert not timing.drifted([100.0] * 4 + [128.0] * 26, RETAKING)  # the slow state only

    # with no retakes, a drifting timing is kept as it is
    [kept], asked = timed(iter([100.0] * 8 + [128.0] * 200))
    assert (kept.p20_us, kept.median_us, kept.runs) == (100.0, 128.0, 30)


def test_a_retake_that_drifts_again_is_kept():
    once = timing.TimingConfig(min_runs=20, max_runs=20, retakes=1)
    [stats], asked = timed(itertools.cycle([100.0] * 10 + [130.0] * 10), config=once)
    assert asked == [((0,), 20), ((0,), 20)]  # the first take, one retake, no third
    assert (stats.stopped, stats.runs, stats.p20_us, stats.p80_us) == ("max", 20, 100.0, 130.0)


def test_a_heavy_callable_that_drifts_is_not_retaken():
    """A tensor-core kernel slows as it heats the chip (settling and its minimum timed span
    cover that); only light callables are timed again."""
    def timed_with(floors, fast_runs):
        run_batch, _ = feeder(iter([268.0] * fast_runs + [280.0] * 10_000))
        [stats] = timing.time_adaptively(run_batch, 1, RETAKING, [None], ["graph"],
                                         floors_us=[floors])
        return stats

    # ~50% of the peak rate: heats the chip, timed to max_runs; its halves drift, kept
    heavy = timed_with((139.0, 20.0), fast_runs=100)
    assert (heavy.p20_us, heavy.median_us, heavy.runs) == (268.0, 280.0, 300)
    # far from the peak: a light kernel, whose drift is an anomaly, is retaken
    light = timed_with((27.0, 20.0), fast_runs=8)
    assert light.p20_us == light.median_us == 280.0


def _inputs_of_run(inputs, seed: int, run: int) -> list:
    """The values `FreshInputs(inputs, seed)` holds at run `run`: each tensor rotated."""
    import torch

    numels = [v.numel() if isinstance(v, torch.Tensor) else 0 for v in inputs]
    return [timing.rotated(v, shift) for v, shift in zip(inputs, timing.run_shifts(seed, run, numels))]


def _timing_inputs():
    import torch

    generator = torch.Generator().manual_seed(3)
    matrix = torch.randn(7, 13, generator=generator)
    return [matrix, matrix.t(), torch.randint(0, 9, (33,), generator=generator),
            torch.tensor([2.5]), 4]


def test_every_timed_run_of_a_trusted_timing_gets_other_values_in_the_same_buffers():
    import torch

    inputs = _timing_inputs()
    fresh = timing.FreshInputs(inputs, seed=1234)
    seen = set()
    for run in range(12):
        fresh.refill()
        expected = _inputs_of_run(inputs, 1234, run)
        for buffer, value in zip(fresh.buffers, expected):
            if isinstance(value, torch.Tensor):
                assert torch.equal(buffer, value), f"run {run}"
                assert sorted(buffer.flatten().tolist()) == sorted(value.flatten().tolist())
            else:
                assert buffer == value
        seen.add(tuple(fresh.buffers[0].flatten().tolist()))
    assert len(seen) >= 11  # a content cache of any size misses


def test_a_refill_restores_values_the_timed_call_overwrote():
    inputs = _timing_inputs()
    fresh = timing.FreshInputs(inputs, seed=5)
    fresh.refill()
    fresh.buffers[0].fill_(0.0)
    fresh.buffers[3].fill_(0.0)
    fresh.refill()
    expected = _inputs_of_run(inputs, 5, 1)
    assert bool((fresh.buffers[0] == expected[0]).all()) and float(fresh.buffers[3]) == 2.5


def test_a_gpu_case_whose_batches_agree_stops_before_its_last():
    """The judge's clock stops a case after three batches within 1% of their median; two, or
    three that scatter, are not enough (a batch is mostly fresh inputs and judging)."""
    from fitness.judge import clock

    assert not clock.settled([100.0, 100.2])
    assert clock.settled([100.0, 100.6, 100.9])
    assert not clock.settled([100.0, 101.5, 100.2])  # 1.5% apart: on to the next batch
    assert not clock.settled([100.0, 101.5, 100.2, 100.5])  # a fourth does not hide the spread
    assert clock.settled([101.0, 100.5, 100.2, 100.9])


def _batches_until_stop(readings: list[float]) -> tuple[str | None, list[float]]:
    """Feeds a GPU case's batch readings to `clock.gpu_stop` one at a time, as `time_case`
    does; returns why it stopped and the batches whose median is the latency."""
    from fitness.judge import clock

    for count in range(1, len(readings) + 1):
        if stop := clock.gpu_stop(readings[:count]):
            return stop, readings[:count][-clock.GPU_BATCHES:]
    return None, []


def test_a_gpu_case_whose_first_batches_read_slow_is_timed_on_until_they_leave_its_median():
    """A candidate's hold goes ahead beside the walks it stopped, whose queued kernels still
    drain: kldiv_compute's reference against itself read 2,145 us where its baseline read
    229 (its batches on an H200, RESULTS.md#warm-start). Batches run on until the median of
    the last five no longer reads past 1.1x the last three's; a case that is just noisy, or
    slower at its end, stops at five as before."""
    import statistics

    from fitness.judge import clock

    stop, counted = _batches_until_stop([8610.4, 4457.9, 2145.3, 241.4, 229.5, 230.1, 229.8, 229.9])
    assert stop == "warmed" and len(counted) == clock.GPU_BATCHES
    assert statistics.median(counted) == 241.4  # not 2,145.3: the first five's
    noisy = [100.0, 104.0, 97.0, 102.0, 99.0, 150.0]
    assert _batches_until_stop(noisy) == ("batches", noisy[:5])
    slower_late = [100.0, 100.0, 103.0, 180.0, 190.0, 185.0]  # no second chance for a slow end
    assert _batches_until_stop(slower_late) == ("batches", slower_late[:5])
    assert _batches_until_stop([100.0, 100.5, 100.2]) == ("settled", [100.0, 100.5, 100.2])
    # a start that never leaves stops at MAX_GPU_BATCHES, its median the last five's
    falling = [1000.0 / (number + 1) for number in range(clock.MAX_GPU_BATCHES + 2)]
    stop, counted = _batches_until_stop(falling)
    assert stop == "warming" and counted == falling[clock.MAX_GPU_BATCHES - 5:clock.MAX_GPU_BATCHES]


def test_a_case_waits_for_the_work_stopped_holders_queued_until_probes_read_quiet_in_a_row():
    """A candidate's hold stops the holders beside it, but what they queued still runs: a
    batch beside it waits out one of their time slices (about 2.4 ms), and seeded_dropout's
    reference read four cases 4-15x slower than its baseline's, alone, in every batch
    (RESULTS.md#queued-beside). The checker probes with a one-element kernel until
    `QUIET_PROBES` in a row read quiet, or the limit passes: a quick probe between busy ones
    is a turn caught early, not quiet."""
    from fitness.judge import timed_batch

    def probing(readings_us, slice_s=0.0024):
        """A probe reading the next of `readings_us`, each busy one a time slice long on the
        clock the wait reads."""
        now, readings = [0.0], iter(readings_us)

        def probe_us():
            reading = next(readings)
            now[0] += reading * 1e-6 if reading < timed_batch.QUIET_US else slice_s
            return reading

        return probe_us, lambda: now[0]

    quick, busy = 20.0, 2400.0
    probe, clock = probing([busy, busy, quick, busy, quick, quick, quick, quick])
    waited = timed_batch.quiet_device(probe, 1.0, clock)
    assert waited["quiet"] and waited["probes"] == 7
    assert waited["waited_ms"] == pytest.approx(3 * 2.4 + 4 * 0.02)  # three turns waited out, four quick probes
    probe, clock = probing([quick] * 5)  # a quiet device costs three probes
    assert timed_batch.quiet_device(probe, 1.0, clock) == {"quiet": True, "probes": 3, "waited_ms": 0.06}
    probe, clock = probing([busy] * 1000)  # work that outlasts the limit: timed anyway, said so
    waited = timed_batch.quiet_device(probe, 0.1, clock)
    assert not waited["quiet"] and waited["probes"] == 42 and waited["waited_ms"] >= 100.0


def test_a_baseline_case_with_no_floor_is_first_timed_in_the_runs_the_case_before_asked_for():
    """A suite's performance inputs grow case by case and have no roofline floor: each case
    was first timed in batches of 8 runs, and on an H200 325 of 719 baseline timings were a
    case timed again, in holds that stop every other walk (RESULTS.md §43)."""
    from fitness.judge import clock

    assert clock.baseline_runs(None, None, True) == 8  # the first case: nothing to go by
    assert clock.baseline_runs(None, 3.1, True) == clock.MAX_RUNS  # after a 3-us case
    assert clock.baseline_runs(None, 400.0, True) == 13
    assert clock.baseline_runs(100.0, 3.1, True) == 25  # a floor wins: twice it, 200 us
    assert clock.baseline_runs(None, 3.1, False) == 2  # the interpreter's
    # inputs that double case by case: no case after the first is timed again
    latencies = [3.0 * 2 ** k for k in range(14)]
    runs = [clock.baseline_runs(None, previous, True) for previous in [None] + latencies[:-1]]
    again = [clock.retimed_runs(r, latency, True) for r, latency in zip(runs, latencies)]
    assert again[0] == clock.MAX_RUNS and again[1:] == [None] * 13


def test_a_baseline_case_timed_in_batches_too_short_for_its_latency_is_timed_again_with_more():
    """The go..done handoff is a fixed cost of every batch. On an H200 the TritonBench-revised
    references, timed as their own baselines in batches of 8 runs (their cases have no
    roofline floor) and as candidates in batches of 32, read 1.3-1.7x faster than themselves
    on cases of 2-5 us (RESULTS.md §41): a baseline's case is timed again with the runs its
    latency asks for, and a candidate's batches hold the baseline's."""
    from fitness.judge import clock

    assert clock.retimed_runs(8, 3.1, True) == clock.MAX_RUNS  # 8 runs of 3 us: a 25-us batch
    assert clock.retimed_runs(8, 400.0, True) == 13  # 5 ms of runs
    assert clock.retimed_runs(8, 600.0, True) is None  # 4.8 ms: within `RETIME_SLACK`
    assert clock.retimed_runs(8, 1000.0, True) is None  # 8 runs of 1 ms are long enough
    assert clock.retimed_runs(clock.MAX_RUNS, 3.1, True) is None  # its floor gave it enough
    assert clock.retimed_runs(2, 3.1, False) is None  # the interpreter's: no clock to mend


def test_an_eager_case_whose_worker_did_not_arm_in_time_is_waited_for_less_but_a_graph_never():
    """Host code that synchronizes before `go` (masked_select's `nonzero`) never arms: on an
    H200 every batch of its reference waited out `ARM_S`, 204 s of a baseline's hold over 16
    cases with every other walk stopped (RESULTS.md#arm-blocked). Once a batch of the walk's
    worker did not arm in time, its eager batches are waited for briefly; a graph's arm (a
    replay enqueued, no host code) is waited for in full whatever came before."""
    from fitness.judge import clock

    assert clock.arm_wait_s("judge-eager", True) == clock.ARM_S
    assert clock.arm_wait_s("judge-eager", False) == clock.ARM_BLOCKED_S < clock.ARM_S / 10
    assert clock.arm_wait_s("judge-graph", False) == clock.ARM_S
