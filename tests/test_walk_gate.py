"""A walk that ran out of device memory beside other walks goes again with the device to
itself: the retry waits for the walks under way and holds new ones back."""

import threading
import time
import types

from benchmarks.registry import builtin
from evo.records import make_candidate
from fitness.device import detect
from fitness.judge import walk
from fitness.judge.activity import Activity
from fitness.judge.walk import Failed, Walk
from fitness.judge.walk_gate import WalkGate
from fitness.measure.meter import Meter


def _neighbour(gate: WalkGate, inside: threading.Event, ended: threading.Event, hold_s: float):
    with gate.side_by_side():
        inside.set()
        time.sleep(hold_s)
        ended.set()


def test_a_walk_that_ran_out_of_memory_beside_another_goes_again_once_it_has_ended():
    judge = types.SimpleNamespace(meter=Meter(), walks_gate=WalkGate(), device=detect("interpreter"))
    task = builtin().get("vector_add")
    inside, ended, tries = threading.Event(), threading.Event(), []

    class OutOfMemoryBesideOthers(Walk):
        def static_checks(self):
            pass

        def run(self):
            tries.append(ended.is_set())  # was the neighbour's walk over?
            if len(tries) == 1:
                raise Failed("correct", "out_of_memory", "CUDA out of memory (a neighbour's)")
            self.fields["correct"] = True

    neighbour = threading.Thread(target=_neighbour, args=(judge.walks_gate, inside, ended, 0.5))
    neighbour.start()
    assert inside.wait(5)
    evaluation = walk.walk(OutOfMemoryBesideOthers, judge, task,
                           make_candidate(task.name, task.baseline_source), Activity(task.name, "c"))
    neighbour.join(5)
    assert tries == [False, True]
    assert evaluation.correct and judge.meter.snapshot()["retries"] == 1


def test_a_walk_waits_while_another_waits_to_go_alone_and_one_outlasting_the_wait_goes_beside():
    gate = WalkGate(wait_s=0.3)
    inside, ended = threading.Event(), threading.Event()
    neighbour = threading.Thread(target=_neighbour, args=(gate, inside, ended, 1.0))
    neighbour.start()
    assert inside.wait(5)
    started = time.monotonic()
    with gate.alone() as got:  # the neighbour outlasts the wait: it goes beside it
        assert not got and not ended.is_set()
    assert 0.25 <= time.monotonic() - started < 0.9
    neighbour.join(5)

    gate = WalkGate(wait_s=5.0)
    order = []
    inside, ended = threading.Event(), threading.Event()
    first = threading.Thread(target=_neighbour, args=(gate, inside, ended, 0.3))
    first.start()
    assert inside.wait(5)

    def alone():
        with gate.alone() as got:
            order.append(("alone", got, ended.is_set()))
            time.sleep(0.2)

    def newcomer():
        with gate.side_by_side():
            order.append(("newcomer",))

    waiting = threading.Thread(target=alone)
    waiting.start()
    time.sleep(0.1)  # the alone walk is waiting for the first one: a newcomer waits behind it
    late = threading.Thread(target=newcomer)
    late.start()
    for thread in (first, waiting, late):
        thread.join(5)
    assert order == [("alone", True, True), ("newcomer",)]
