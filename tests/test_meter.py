"""The Evaluator's meter keeps the phases a reply names that it knows, and only those."""

from fitness.measure.meter import Meter


def test_a_capture_s_parts_reach_the_meter_and_a_name_of_the_worker_s_own_does_not():
    """A worker's timed_capture says how long its capture took in parts (the graph's begin,
    the candidate's host code, the instantiation): each lands beside the whole, so where a
    case's 300-450 ms of capture goes on a GPU can be read (RESULTS.md §30). A name the
    worker makes up is dropped: a candidate cannot fill the stats."""
    meter = Meter()
    meter.spent("candidate.timed_capture", {"spent_s": {
        "capture": 0.4, "begin": 0.25, "runs": 0.1, "instantiate": 0.05, "my_speedup": 9.0}})
    spent = meter.snapshot()["request_s"]
    assert {name: spent[name] for name in spent} == {
        "candidate.timed_capture.capture": 0.4, "candidate.timed_capture.begin": 0.25,
        "candidate.timed_capture.runs": 0.1, "candidate.timed_capture.instantiate": 0.05}


def test_every_timed_case_is_logged_with_its_batches_and_the_verdict_agrees_with_them():
    """The meter's log of timed cases (`Evaluator.timed_cases`): one entry per case timed,
    the baseline's and the candidate's, each batch's per-run reading in it and its median the
    one the evaluation reports. Copies of one kernel read 5-14x apart under load on an H200,
    each copy's batches agreeing (RESULTS.md §36): the log is where a slow copy's batches,
    fills and neighbours are read."""
    import statistics

    from benchmarks.registry import builtin
    from evo.records import make_candidate
    from fitness import Evaluator, Settings
    from fitness.judge import clock

    task = builtin().get("vector_add")
    candidate = make_candidate("vector_add", task.baseline_source + "\n_COPY = 1\n")
    with Evaluator(Settings(device="interpreter", workers=1, spares=0)) as evaluator:
        evaluation = evaluator.evaluate(task, candidate)
        logged = evaluator.timed_cases()
    assert evaluation.correct, evaluation.error_trace
    cases = [case.name for case in task.cases_for("interpreter")]
    mine = [entry for entry in logged if entry["candidate"] == candidate.id]
    assert [entry["case"] for entry in sorted(mine, key=lambda e: cases.index(e["case"]))] == cases
    assert {entry["case"] for entry in logged if entry["candidate"] is None} == set(cases)
    for entry in mine:
        assert entry["task"] == "vector_add" and entry["beside"] == 0
        assert len(entry["per_run_us"]) == clock.INTERPRETER_BATCHES
        assert entry["median_us"] == statistics.median(entry["per_run_us"])
        assert entry["fill_gbps"] == []  # CPU time: no fill on a device
        at = evaluation.case_names.index(entry["case"])
        assert evaluation.latency_us[at] == entry["median_us"]
