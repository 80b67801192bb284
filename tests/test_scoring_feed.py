"""The scorer feeds every actor from one queue shared by all islands (issue 12, item 3).

The actors here are real Ray actors that answer like a FitnessActor after a pause, so the
test sees the dispatch alone: how many evaluations each actor holds at once, and whether
each island's brood comes back whole.
"""

import asyncio
import time

import pytest
import ray

from evo import scoring
from evo.records import Evaluation, Task, make_candidate


@ray.remote(num_cpus=0)
class SlowJudge:
    """Answers `evaluate` after `pause_s`; remembers the most evaluations it held at once."""

    def __init__(self, pause_s: float):
        self.pause_s, self.holding, self.most, self.answered = pause_s, 0, 0, 0
        self.tasks = set()

    async def evaluate(self, task, candidate) -> Evaluation:
        self.tasks.add(task.name)
        self.holding += 1
        self.most = max(self.most, self.holding)
        await asyncio.sleep(self.pause_s)
        self.holding -= 1
        self.answered += 1
        return Evaluation(candidate_id=candidate.id, stage_reached="timed", call_ok=True,
                          correct=True, compile_s=0.1)

    def counts(self) -> tuple[int, int]:
        return self.most, self.answered

    def seen(self) -> set:
        return self.tasks


def _task(name: str) -> Task:
    return Task(name=name, suite="test", instruction="", reference=None,
                baseline_source=f"def {name}(x):\n    return x\n", entry_point=name,
                make_inputs=None, cases=(), interpreter_cases=(), tolerance={}, flops=None,
                bytes=None, difficulty=1)


def _drain(scorer) -> dict:
    done, deadline = {}, time.monotonic() + 60
    while scorer.busy():
        assert time.monotonic() < deadline, "the scorer never finished"
        done.update(scorer.collect(scoring.ready(scorer.refs())))
    return done


@pytest.mark.slow
def test_every_actor_is_kept_fed_and_every_island_gets_its_brood(shared_ray):
    judges = [SlowJudge.remote(0.2) for _ in range(2)]
    scorer = scoring.Scorer(judges, {"demo": _task("demo")}, max_in_flight_per_actor=3,
                            answer_timeout_s=60)
    islands = [("demo", island) for island in range(4)]
    for island in islands:  # islands arrive one by one, each with its own brood
        brood = [make_candidate("demo", f"def demo(x):\n    return x + {island[1] * 10 + slot}\n",
                                island=island[1]) for slot in range(5)]
        brood.append(brood[0])  # bred twice: scored once, the second row reuses it
        scorer.submit(island, brood, known={}, recorded={})
    assert len(scorer.refs()) == 6  # both actors filled to the limit at once

    done = _drain(scorer)
    assert sorted(done) == islands
    for island, outcome in done.items():
        assert [s.candidate.island for s in outcome.scored] == [island[1]] * 6
        assert [s.reused for s in outcome.scored] == [False] * 5 + [True]
        assert len(outcome.new) == 5 and abs(outcome.gpu_seconds - 0.5) < 1e-9
    counts = ray.get([judge.counts.remote() for judge in judges], timeout=60)
    assert [most for most, _ in counts] == [3, 3]  # never more than the limit, never idle
    assert sum(answered for _, answered in counts) == 20  # 4 islands x 5 distinct
    for judge in judges:
        ray.kill(judge)



def test_an_actor_takes_a_task_it_knows_then_a_new_task_then_the_head():
    homes = {"alpha": {0}, "beta": {1}}
    queued = ["alpha", "alpha", "beta", "gamma", "beta"]
    assert scoring.pick(queued, 1, homes) == 2  # beta's baseline is timed on actor 1
    assert scoring.pick(queued, 0, homes) == 0
    assert scoring.pick(queued, 2, homes) == 3  # a third actor starts on the new task
    assert scoring.pick(["beta", "alpha"], 2, homes) == 0  # nothing new: nobody idles
