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
