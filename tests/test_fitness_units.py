"""The fitness room's rules, checked directly: comparison, anti-cheat, limits, device, gate."""

import os
import threading
import time

import pytest
import torch

from benchmarks.registry import builtin
from evo.records import make_candidate
from fitness.processes import jail, protocol
from fitness.measure import timing
from fitness.device import DeviceError, DeviceInfo, detect
from fitness.processes.device_lock import DeviceLock
from fitness.judge import anticheat, checking
from fitness.judge.cascade import Cascade, amd_only_options
from fitness.settings import Limits
from fitness.judge.checker import Checker
from fitness.processes.pool import checker_env

H100 = DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", 0, 3350.0,
                  {"float32": 67.0, "bfloat16": 989.0}, 50 << 20)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_a_region_left_unwritten_fails_beside_a_reference_of_zeros(dtype):
    from fitness.judge.timed_batch import POISON_BYTES

    zeros = torch.zeros(4, dtype=dtype)
    for byte in POISON_BYTES:
        unwritten = torch.full((4 * zeros.element_size(),), byte, dtype=torch.uint8).view(dtype)
        assert checking.compare(zeros, unwritten, 1e-2, 1e-2)["kind"] is not None, (byte, unwritten)


def test_an_output_behind_another_allocation_is_read_from_its_own_place_in_the_region():
    from fitness.judge.timed_batch import region_outputs

    region = torch.zeros(1024, dtype=torch.uint8)
    rows = torch.arange(8, dtype=torch.float32) + 10.0  # a first allocation: per-row values
    region[:32].view(torch.float32).copy_(rows)
    region[512:516].view(torch.float32).fill_(rows.mean())  # the output, behind it
    mean, = region_outputs(region, [{"at": 512, "dtype": "float32", "shape": [], "stride": [],
                                     "offset": 0}])
    assert float(mean) == float(rows.mean()) != float(rows[0])
    tail, = region_outputs(region, [{"at": 8, "dtype": "float32", "shape": [2], "stride": [3],
                                     "offset": 1}])
    assert tail.tolist() == [rows[3].item(), rows[6].item()]
    with pytest.raises(protocol.ProtocolError):
        region_outputs(region, [{"at": 1020, "dtype": "float32", "shape": [2], "stride": [1],
                                 "offset": 0}])


def test_a_fill_that_another_context_cut_is_told_from_the_case_s_quickest():
    from fitness.judge.timed_batch import burst_cut

    # an H200's vector_add bursts read 1.05-1.16 ms (RESULTS.md#fill-exposure); a time slice
    # of another context in the middle adds milliseconds
    assert not burst_cut(1.16, [1.148, 1.05])
    assert burst_cut(1.05 + 2.0, [1.148, 1.05])
    # a worker that slows every fill from the start cannot raise the bound past its quickest
    assert burst_cut(9.0, [4.0, 1.05, 4.1])
    assert not burst_cut(0.02, [0.01]) and not burst_cut(5.0, [])  # a tiny case; the first burst


def test_the_wait_for_the_judge_s_turn_counts_past_the_least_hand_over():
    from fitness.judge.timed_batch import TURN_ALLOWANCE_US, turn_charged_us

    # an idle worker's context handed the H200 over in 44-253 us (RESULTS.md#late-turn): an
    # honest batch pays what its hand-over took past the least
    assert turn_charged_us(44.0) == 44.0 - TURN_ALLOWANCE_US > 0.0
    assert turn_charged_us(TURN_ALLOWANCE_US / 2) == 0.0
    # `done` said 10 us after `go` while a kernel of the worker's own ran 850 us more: all of
    # it is counted but the allowance, less than any hand-over
    assert turn_charged_us(850.0 + 100.0) == 950.0 - TURN_ALLOWANCE_US > 850.0


def test_the_private_mirror_holds_each_run_s_values_where_the_lent_sets_do():
    """The fill's mirror is read with the lent sets' specs (byte place, strides, offset in
    elements): one copy of it lands every value where the worker reads it."""
    import torch

    from fitness.processes import protocol, shared_memory

    values = [torch.arange(12, dtype=torch.float32).reshape(3, 4).t(), 7,
              torch.arange(5, dtype=torch.float16)[1:]]
    layout = protocol.layouts(values)
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    spans = [protocol.extent(t.shape, t.stride(), t.storage_offset()) * t.element_size()
             for t in tensors]
    offsets, total = shared_memory.layout(spans * 2)
    mirror = torch.zeros(total, dtype=torch.uint8)
    for run in range(2):
        at = iter(offsets[run * 2:(run + 1) * 2])
        specs = [{"at": next(at), **spec} if "dtype" in spec else spec for spec in layout]
        views = shared_memory.unpack(mirror, specs)
        for view, value in zip(views, values):
            if isinstance(view, torch.Tensor):
                view.copy_(value + run)
        again = shared_memory.unpack(mirror, specs)
        assert torch.equal(again[0], values[0] + run) and again[0].stride() == values[0].stride()
        assert again[1] == 7 and torch.equal(again[2], values[2] + run)


def test_an_output_s_fingerprint_weighed_in_chunks_is_its_whole_sum_and_tells_a_moved_word():
    """A GPU output's fingerprint is weighed a chunk at a time (its int64 copy whole ran a
    checker out of memory on an 8-GB output): the same numbers as the whole sum, and two
    outputs holding the same words in other places still differ."""
    from fitness.judge.checker import weighted_words

    words = torch.randint(-2**31, 2**31 - 1, (1_000_030,), dtype=torch.int32)
    words[-5000:] = 2**31 - 1  # weighed by ~10^6: sums past int64, which wrap, chunked or whole
    values = words.tolist()
    expected = (f"{sum(w * (i % 1_000_003 + 1) for i, w in enumerate(values)) % 2**64}:"
                f"{sum(values) % 2**64}")
    assert weighted_words(words, chunk=4099) == weighted_words(words) == expected
    words[[3, 1_000_010]] = torch.tensor([5, 6], dtype=torch.int32)
    swapped = words.clone()
    swapped[[3, 1_000_010]] = words[[1_000_010, 3]]
    assert weighted_words(swapped, chunk=4099) != weighted_words(words, chunk=4099)


def test_the_host_words_lent_to_a_worker_cannot_be_shrunk_under_the_checker():
    from fitness.processes.host_words import PAGE_BYTES, HostWords

    words = HostWords.create()
    lent = words.export()
    try:
        with pytest.raises(PermissionError):
            os.ftruncate(lent, 0)
        words.store("done", 7)
        assert words.load("done") == 7 and os.fstat(lent).st_size == PAGE_BYTES
    finally:
        os.close(lent)
        words.release()


def test_rocm_latency_is_flagged_until_the_judge_clock_is_wired_for_hip():
    # ROCm batches are timed by the worker's CPU time, which a worker that waits for its GPU
    # asleep would bring near zero: recorded, flagged, never ranked (docs/design.md)
    from evo.records import Evaluation
    from fitness.eval_cli import _summary_line

    assert DeviceInfo("cuda", "NVIDIA H200").timing_meaningful
    assert not DeviceInfo("rocm", "AMD Instinct MI300X").timing_meaningful
    assert not DeviceInfo("interpreter", "cpu-interpreter").timing_meaningful
    line = _summary_line("k.py", Evaluation("c", "timed", True, True, case_names=("a",),
                                            speedup=3.0, worst_speedup=2.0, backend="rocm"))
    assert "(rocm: timing not meaningful, the judge's GPU clock is not wired for HIP)" in line
    line = _summary_line("k.py", Evaluation("c", "timed", True, True, case_names=("a",),
                                            speedup=1.0, worst_speedup=1.0, backend="cuda",
                                            timing_meaningful=True))
    assert "not meaningful" not in line


def test_nan_never_passes_even_where_tolerance_is_huge():
    expected = torch.tensor([1.0, 2.0, 3.0])
    actual = torch.tensor([1.0, float("nan"), 3.0])
    assert checking.compare(expected, actual, 1e9, 1e9)["kind"] == "nan"


def test_nan_where_the_reference_is_nan_passes():
    expected = torch.tensor([1.0, float("nan")])
    assert checking.compare(expected, expected.clone(), 1e-5, 1.3e-6)["kind"] is None


def test_tolerance_is_per_element_not_scaled_by_the_largest_output():
    expected = torch.tensor([1000.0, 1e-3])
    close = expected + torch.tensor([1e-3, 0.0])  # 1e-3 <= 1e-5 + 1.3e-6 * 1000
    far = expected + torch.tensor([0.0, 1e-3])  # small outputs must be right to their size
    assert checking.compare(expected, close, 1e-5, 1.3e-6)["kind"] is None
    verdict = checking.compare(expected, far, 1e-5, 1.3e-6)
    assert verdict["kind"] == "mismatch" and "flat index 1" in verdict["detail"]


def test_default_tolerances_are_no_looser_than_torch_testing():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        atol, rtol = checking.tolerance_for({}, dtype)
        reference = torch.ones(1, dtype=dtype)
        torch.testing.assert_close(reference + (atol + rtol) * 0.99, reference)  # inside ours: inside theirs


def test_builtin_tolerances_wider_than_torch_testing_say_why():
    for task in builtin().tasks():
        for dtype_name, (atol, rtol) in task.tolerance.items():
            default = checking.DEFAULT_TOLERANCE.get(dtype_name, (0.0, 0.0))
            if atol > default[0] or rtol > default[1]:
                assert task.tolerance_reason, f"{task.name} widens {dtype_name} without a reason"


def test_same_inputs_twice_must_agree_within_a_fraction_of_the_tolerance():
    expected = [torch.ones(1000)]
    first = [torch.ones(1000)]
    jitter = [torch.ones(1000) + 5e-6]  # inside the tolerance, far beyond rounding
    assert checking.disagreement(first, [first[0].clone()], expected, {}) is None
    assert "disagree" in checking.disagreement(first, jitter, expected, {})


def test_shape_and_dtype_must_match_exactly():
    expected = torch.zeros(4)
    assert checking.compare(expected, torch.zeros(1, 4), 1e-5, 1e-5)["kind"] == "wrong_shape"
    assert checking.compare(expected, torch.zeros(4, dtype=torch.float64),
                            1e-5, 1e-5)["kind"] == "wrong_dtype"


def test_integer_outputs_compare_exactly():
    expected = torch.tensor([1, 2, 3])
    assert checking.compare(expected, torch.tensor([1, 2, 4]), 0.0, 0.0)["kind"] == "mismatch"


def test_torch_work_is_weighed_against_the_calls_inputs_and_the_allowlist_is_per_task():
    task = builtin().get("vector_add")
    whole = {"launches": 1, "ops": ["empty_like", "sum"], "input_elements": 2000,
             "work": {"empty_like": [1000, 0], "sum": [1000, 0]}}
    assert anticheat.call_verdict(task, whole)[0] == "cheat_torch_compute"
    partials = {**whole, "work": {"empty_like": [1000, 0], "sum": [16, 0], "mean": [16, 0],
                                  "_local_scalar_dense": [2, 2]}}
    assert anticheat.call_verdict(task, partials) is None  # a host reduction of partials
    by_element = {**whole, "work": {"empty_like": [1000, 0], "fill_": [1000, 1000],
                                    "_local_scalar_dense": [2000, 2000]}}
    verdict = anticheat.call_verdict(task, by_element)
    assert verdict[0] == "cheat_torch_compute" and "3000 elements" in verdict[1]
    import dataclasses
    lenient = dataclasses.replace(task, torch_allowlist=("sum",))
    assert anticheat.call_verdict(lenient, whole) is None
    copies = {**whole, "work": {"clone": [2000, 0]}}
    assert anticheat.call_verdict(task, copies) is None
    assert anticheat.call_verdict(builtin().get("transpose"), copies)[0] == "cheat_torch_compute"


def test_faster_than_the_roofline_is_implausible():
    params = {"N": 1 << 24, "dtype": "float32"}  # 201 MB moved: >= 60 us on an H100
    task = builtin().get("vector_add")
    honest = timing.case_roofline(H100, task.flops, task.bytes, params, 70.0)
    cheat = timing.case_roofline(H100, task.flops, task.bytes, params, 5.0)
    assert anticheat.implausible(honest, "big") is None
    assert "roofline" in anticheat.implausible(cheat, "big")


def test_interpreter_latency_has_no_roofline():
    assert timing.roofline_fraction(DeviceInfo("interpreter", "cpu"), 1e9, 1e9, 1.0) is None


def test_limits_reject_unknown_keys_and_accept_short_names():
    assert Limits.from_mapping({"compile": 5, "bench_s": 7}).compile_s == 5.0
    with pytest.raises(ValueError, match="unknown fitness timeout 'compil'"):
        Limits.from_mapping({"compil": 5})
    with pytest.raises(ValueError, match="positive"):
        Limits.from_mapping({"check_s": -1})


def test_stall_needs_own_code_for_the_whole_limit_with_no_launch_between():
    from fitness.sandbox.instrument import Stall

    stall = Stall(stall_s=1.0)
    assert not stall.observe(0.0, True, 0)
    assert not stall.observe(0.9, True, 0)
    assert stall.observe(1.0, True, 0)  # one second of nothing but its own code

    launching = Stall(stall_s=1.0)
    assert not any(launching.observe(0.5 * step, True, step) for step in range(10))

    interrupted = Stall(stall_s=1.0)
    samples = [(0.0, True), (0.6, False), (1.2, True), (2.1, True), (2.2, True)]
    assert [interrupted.observe(now, own, 0) for now, own in samples] == [
        False, False, False, False, True]  # the streak restarts at 1.2 s


def test_device_detection_names_the_problem():
    assert detect("interpreter").backend == "interpreter"
    with pytest.raises(DeviceError, match="unknown device 'tpu'"):
        detect("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no GPU"):
            detect("cuda")


def test_sandbox_environment_is_an_allowlist(monkeypatch):
    for name in ("OPENAI_API_KEY", "MYSQL_PWD", "DATABASE_URL", "GITHUB_PAT", "ANY_NAME"):
        monkeypatch.setenv(name, "leak")
    env = jail.sandbox_env("interpreter")
    assert "leak" not in env.values()
    assert set(env) - set(jail.ENV_ALLOWLIST) <= {
        "PATH", "HOME", "TMPDIR", "TRITON_CACHE_DIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED", "PYTHONNOUSERSITE", "OMP_NUM_THREADS", "TRITON_INTERPRET"}
    assert "TRITON_INTERPRET" not in jail.sandbox_env("cuda")


def test_checker_environment_has_no_secrets(monkeypatch):
    for name in ("OPENAI_API_KEY", "GH_TOKEN", "MYSQL_PWD", "DATABASE_URL", "RAY_ADDRESS"):
        monkeypatch.setenv(name, "leak")
    env = checker_env(DeviceInfo("interpreter", "cpu"), "/tmp/w")
    assert env["PATH"] == os.environ["PATH"]  # a compiler must still be found
    assert "leak" not in env.values()
    assert env["TRITON_INTERPRET"] == "1" and env["HOME"] == "/tmp/w"
    assert "TRITON_INTERPRET" not in checker_env(H100, "/tmp/w")


def test_amd_only_launch_options_fail_on_nvidia_with_a_reason():
    source = builtin().get("vector_add").baseline_source.replace(
        'num_warps=config["num_warps"]', 'num_warps=config["num_warps"], waves_per_eu=2')
    assert amd_only_options(source) == ["waves_per_eu"]
    cascade = Cascade(H100, None, None, DeviceLock(), Limits())
    evaluation = cascade.evaluate(builtin().get("vector_add"), make_candidate("vector_add", source))
    assert evaluation.failure_kind == "unsupported_on_backend"
    assert "waves_per_eu" in evaluation.error_trace and "AMD" in evaluation.error_trace


def test_a_checker_warms_up_at_start_and_keeps_nothing_of_it():
    # The warm-up runs a prepare's and a compare's device work on made-up tensors: none of it
    # may look like a walk's state (a digest kept would make a later output a "replay").
    checker = Checker({"device": DeviceInfo("interpreter", "cpu-interpreter")}, None)
    checker.warm_up()
    assert checker.prepared == {} and checker.last_call is None
    assert checker.output_digests == set() and checker.timed == {}


def test_timing_holds_the_device_alone():
    gate = DeviceLock(exclusive_timing=True)
    events = []

    def checker():
        with gate.shared():
            events.append("shared-start")
            time.sleep(0.2)
            events.append("shared-end")

    thread = threading.Thread(target=checker)
    thread.start()
    time.sleep(0.05)
    with gate.exclusive():
        events.append("exclusive")
    thread.join()
    assert events == ["shared-start", "shared-end", "exclusive"]
    assert gate.counters()["busy_s"] >= 0.2


def test_interpreter_timing_holds_take_turns_beside_shared_holders():
    """Where timing is CPU time (not exclusive), one timing hold at a time: the clock stops
    every other candidate worker while it times one, and two holds at once would each stop
    the other's worker for good. Shared holders still go on beside a timing hold."""
    gate = DeviceLock(exclusive_timing=False)
    events = []

    def timing(name: str) -> None:
        with gate.exclusive():
            events.append(f"{name}-start")
            time.sleep(0.2)
            events.append(f"{name}-end")

    first = threading.Thread(target=timing, args=("first",))
    first.start()
    time.sleep(0.05)
    second = threading.Thread(target=timing, args=("second",))
    second.start()
    with gate.shared():
        events.append("shared")
    first.join(5)
    second.join(5)
    assert events == ["first-start", "shared", "first-end", "second-start", "second-end"]


def test_timing_does_not_wait_out_a_hung_shared_holder():
    # A candidate spinning until its stage limit holds the device shared; timing must not
    # stall the whole pool for that limit, and new shared holders must still wait for it.
    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=0.2)
    events = []

    def hung_candidate():
        with gate.shared():
            events.append("hung-start")
            time.sleep(1.5)
        events.append("hung-end")

    def late_checker():
        with gate.shared():
            events.append("late-shared")

    hung = threading.Thread(target=hung_candidate)
    hung.start()
    time.sleep(0.05)
    started = time.monotonic()
    with gate.exclusive():
        waited_s = time.monotonic() - started
        late = threading.Thread(target=late_checker)
        late.start()
        time.sleep(0.1)
        events.append("exclusive")
    late.join()
    hung.join()
    assert 0.15 <= waited_s < 1.0
    assert gate.counters()["stragglers"] == 1
    assert events.index("exclusive") < events.index("late-shared") < events.index("hung-end")


def test_a_timing_going_ahead_beside_a_walk_is_given_its_worker_and_its_checker_to_stop():
    # on an H200, TritonBench-revised references timed against themselves read 0.30-1.18x,
    # and 11 of 27 were cut as clear losers: their timings went ahead beside checkers making
    # other walks' reference outputs, unnamed, so never stopped (RESULTS.md §40)
    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=0.1)
    worker, checker, recorder = object(), object(), object()
    inside, release = threading.Barrier(3), threading.Event()

    def hold(**named):
        with gate.shared(**named):
            inside.wait(timeout=5)
            release.wait(5)

    threads = [threading.Thread(target=hold, kwargs={"process": (worker, checker)}),
               threading.Thread(target=hold, kwargs={"process": recorder, "long": True})]
    for thread in threads:
        thread.start()
    inside.wait(timeout=5)
    with gate.exclusive() as beside:
        named = beside
    release.set()
    for thread in threads:
        thread.join(5)
    assert sorted(map(id, named)) == sorted(map(id, (worker, checker, recorder)))
    with gate.exclusive() as beside:  # every name left with its hold
        assert beside == []


def test_timing_waits_for_short_shared_holders_but_not_for_compiling_ones():
    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=1.0)
    entered = threading.Barrier(3)
    events = []

    def holder(name: str, compiling: bool, seconds: float):
        with gate.shared(compiling=compiling):
            entered.wait(timeout=5)
            time.sleep(seconds)
            events.append(f"{name}-end")

    threads = [threading.Thread(target=holder, args=("compile", True, 0.8)),
               threading.Thread(target=holder, args=("check", False, 0.2))]
    for thread in threads:
        thread.start()
    entered.wait(timeout=5)
    started = time.monotonic()
    with gate.exclusive():
        waited_s = time.monotonic() - started
        events.append("exclusive")
    for thread in threads:
        thread.join(timeout=5)
    assert events == ["check-end", "exclusive", "compile-end"]
    assert 0.15 <= waited_s < 0.6
    counters = gate.counters()
    assert 0.15 <= counters["timing_wait_s"] < 0.6
    assert 0.15 <= counters["drain_wait_s"] <= counters["timing_wait_s"]
    assert counters["stragglers"] == 0


def test_a_baseline_timing_waits_out_every_holder_stragglers_and_compiling_ones_too():
    # A candidate call that keeps the device busy past the straggler wait must not run beside
    # the baseline's timing: a slowed baseline inflates every speedup of its task.
    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=0.1)
    entered = threading.Barrier(3)
    events = []

    def holder(name: str, compiling: bool, seconds: float):
        with gate.shared(compiling=compiling):
            entered.wait(timeout=5)
            time.sleep(seconds)
            events.append(f"{name}-end")

    threads = [threading.Thread(target=holder, args=("compile", True, 0.6)),
               threading.Thread(target=holder, args=("spin", False, 0.4))]
    for thread in threads:
        thread.start()
    entered.wait(timeout=5)
    with gate.exclusive(alone=True):
        events.append("baseline")
    for thread in threads:
        thread.join(timeout=5)
    assert events == ["spin-end", "compile-end", "baseline"]
    with gate.exclusive():  # a candidate's timing still goes ahead past the straggler wait
        pass
    assert gate.counters()["stragglers"] == 0


def test_a_baseline_timing_goes_ahead_beside_a_suite_reference_run_for_its_outputs():
    # a reference compiling for minutes held the baseline, and every walk behind it; the
    # baseline goes ahead with the reference's worker stopped (`clock.time_case`)
    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=0.1)
    entered, release = threading.Event(), threading.Event()
    events = []

    def reference():
        with gate.shared(reference=True):
            entered.set()
            release.wait(timeout=10)
            events.append("reference-end")

    thread = threading.Thread(target=reference)
    thread.start()
    entered.wait(timeout=5)
    started = time.monotonic()
    with gate.exclusive(alone=True):
        events.append("baseline")
    waited_s = time.monotonic() - started
    release.set()
    thread.join(timeout=5)
    assert events == ["baseline", "reference-end"] and waited_s < 1.0


def test_timing_waits_for_a_candidate_that_is_loading_however_long_it_takes():
    gate = DeviceLock(exclusive_timing=True, straggler_wait_s=0.1)
    entered = threading.Event()
    events = []

    def loading():
        with gate.shared(loading=True):
            entered.set()
            time.sleep(0.5)  # past the straggler wait: an import's device work still runs
            events.append("load-end")

    thread = threading.Thread(target=loading)
    thread.start()
    entered.wait(timeout=5)
    with gate.exclusive():
        events.append("exclusive")
    thread.join(timeout=5)
    assert events == ["load-end", "exclusive"]
    assert gate.counters()["stragglers"] == 0


def test_an_output_left_unwritten_fails_as_nan_whichever_poison_it_holds():
    from fitness.sandbox import instrument

    expected = torch.ones(8)
    drawn = set()
    for _ in range(64):
        out = torch.empty(8)
        instrument.poison(out)
        drawn.add(float(out[0]))
        out[:4] = 1.0
        assert checking.compare(expected, out, 1e9, 1e9)["kind"] == "nan"
    assert {float("inf"), float("-inf")} <= drawn and any(v != v for v in drawn)
    ints = {int(instrument.poison_value(torch.int64)) for _ in range(64)}
    assert ints == {torch.iinfo(torch.int64).min, torch.iinfo(torch.int64).max}


def test_an_output_made_in_inference_mode_is_poisoned_outside_it():
    """A captured call's fresh allocations are poisoned before each replay, outside the
    candidate's `@torch.inference_mode()`; honest kernels decorated so were refused on a GPU."""
    from fitness.sandbox import instrument

    with torch.inference_mode():
        out = torch.zeros(8)
    plain = torch.zeros(8)
    for tensor in (out, plain):
        instrument.poison(tensor)
        assert not torch.isfinite(tensor).any()
    assert out.is_inference() and not plain.is_inference()


def test_a_timed_run_s_outputs_are_checked_on_elements_drawn_at_random_and_small_ones_whole():
    """`compare`'s sample: a run wrong in 1% of a large output is caught and the element named
    is one of the wrong ones; an output no larger than the sample is compared whole, so one
    wrong element of it fails every time; integer outputs are sampled the same way."""
    import torch

    from fitness.judge import checking

    expected = torch.zeros(1 << 22)
    actual = expected.clone()
    wrong = torch.randperm(expected.numel())[: expected.numel() // 100]
    actual[wrong] = 1.0
    verdict = checking.compare(expected, actual, 1e-5, 1e-5, sample=1 << 16)
    assert verdict["kind"] == "mismatch" and f"drawn at random of {1 << 22}" in verdict["detail"]
    named = int(verdict["detail"].split("first at flat index ")[1].split(":")[0])
    assert actual[named] == 1.0
    assert checking.compare(expected, expected.clone(), 1e-5, 1e-5, sample=1 << 16)["kind"] is None

    small = torch.zeros(1000)
    one_off = small.clone()
    one_off[637] = 1.0
    for _ in range(5):
        verdict = checking.compare(small, one_off, 1e-5, 1e-5, sample=1000)
        assert verdict["kind"] == "mismatch" and "flat index 637" in verdict["detail"]

    ints = torch.arange(1 << 20)
    off = ints.clone()
    off[::2] += 1
    verdict = checking.compare(ints, off, 0.0, 0.0, sample=1 << 12)
    assert verdict["kind"] == "mismatch" and "drawn at random" in verdict["detail"]


def test_an_output_compared_in_chunks_gets_the_verdict_it_gets_whole(monkeypatch):
    """`compare` goes over an output in chunks of `COMPARE_CHUNK` elements, so a billion of
    them need no whole float64 copies; the verdict is the whole comparison's: a NaN in a
    late chunk fails as `nan` ahead of a mismatch in an early one, and counts, first
    indices and the largest errors are over every chunk."""
    expected = torch.linspace(-3, 3, 1000, dtype=torch.float32).reshape(10, 100)
    mismatched = expected.clone()
    mismatched.view(-1)[10] += 1.0
    mismatched.view(-1)[930] -= 2.0
    both = mismatched.clone()
    both.view(-1)[700] = float("nan")
    whole = {name: checking.compare(expected, actual, 1e-5, 1.3e-6)
             for name, actual in (("mismatched", mismatched), ("both", both))}
    monkeypatch.setattr(checking, "COMPARE_CHUNK", 64)
    for name, actual in (("mismatched", mismatched), ("both", both)):
        assert checking.compare(expected, actual, 1e-5, 1.3e-6) == whole[name]
    assert whole["both"]["kind"] == "nan" and "flat index 700" in whole["both"]["detail"]
    assert whole["mismatched"]["kind"] == "mismatch"
    assert whole["mismatched"]["detail"].startswith("2 of 1000 outputs")
    assert "flat index 10:" in whole["mismatched"]["detail"]
    assert whole["mismatched"]["max_abs_err"] == pytest.approx(2.0, rel=1e-6)


def test_a_baseline_timing_waits_out_long_holders_while_short_ones_still_go_on():
    """A baseline's timing waits for every holder; behind a long one (a suite's test run, a
    recording of its timing code: 10 s each on average on an H200) it held every walk back
    for the whole wait (drain 15 s a hold, walks waiting 56% of their time, RESULTS.md §36).
    Now short holders still come and go while it waits out the long ones, a new long one
    waits behind it, and it still times with no holder beside it."""
    gate = DeviceLock(exclusive_timing=True)
    events = []
    long_in = threading.Event()

    def long_holder(name: str, seconds: float) -> None:
        with gate.shared(long=True):
            events.append(f"{name}-start")
            long_in.set()
            time.sleep(seconds)
            events.append(f"{name}-end")

    def baseline() -> None:
        with gate.exclusive(alone=True) as beside:
            events.append(("baseline", beside))

    def short() -> None:
        with gate.shared():
            events.append("short")

    first = threading.Thread(target=long_holder, args=("long", 1.0))
    first.start()
    assert long_in.wait(5)
    timing = threading.Thread(target=baseline)
    timing.start()
    time.sleep(0.2)
    later_long = threading.Thread(target=long_holder, args=("later-long", 0.0))
    later_long.start()
    time.sleep(0.1)
    started = time.monotonic()
    quick = threading.Thread(target=short)
    quick.start()
    quick.join(5)
    assert time.monotonic() - started < 0.5  # not held back for the long holder
    for thread in (first, timing, later_long):
        thread.join(10)
    order = [e if isinstance(e, str) else e[0] for e in events]
    assert order == ["long-start", "short", "long-end", "baseline", "later-long-start",
                     "later-long-end"]
    assert events[3][1] == []  # nothing beside it
