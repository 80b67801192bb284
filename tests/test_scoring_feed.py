"""The scorer feeds every actor from one queue shared by all islands (issue 12, item 3).

The actors here are real Ray actors that answer like a FitnessActor after a pause, so the
test sees the dispatch alone: how many evaluations each actor holds at once, and whether
each island's brood comes back whole; and real FitnessActors, one of them with its device out
(its workers never start), which gets nothing more (issue 49).
"""

import asyncio
import time

import pytest
import ray

from benchmarks.registry import builtin
from evo import fatal, scoring
from evo.records import Evaluation, Task, make_candidate
from fitness import Settings
from fitness.actor import FitnessActor


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


def _out_of_order_actor():
    """A real FitnessActor whose device is out at once: no worker starts within 0.01 s."""
    return FitnessActor.options(num_gpus=0).remote(
        Settings(device="interpreter", workers=1, timeouts={"ready_s": 0.01}))


def _vector_add_brood(count: int) -> list:
    source = builtin().get("vector_add").baseline_source
    return [make_candidate("vector_add", f"{source}\n_VARIANT = {slot}\n") for slot in range(count)]


@pytest.mark.slow
def test_an_actor_whose_device_is_out_gets_nothing_more_and_the_others_score_its_share(
        interpreter_fitness, capsys):
    lost = _out_of_order_actor()
    scorer = scoring.Scorer([lost, interpreter_fitness[0]], {"vector_add": builtin().get("vector_add")},
                            max_in_flight_per_actor=2, answer_timeout_s=300)
    scorer.submit(("vector_add", 0), _vector_add_brood(3), known={}, recorded={})
    assert len(scorer.refs()) == 3  # two went to the actor whose device is out
    done = _drain(scorer)
    assert [s.evaluation.correct for s in done[("vector_add", 0)].scored] == [True] * 3
    said = [line for line in capsys.readouterr().out.splitlines() if "out of the campaign" in line]
    assert len(said) == 1 and said[0].startswith("fitness actor 0 is out of the campaign: ")
    assert "failed to start 3 times" in said[0]
    ray.get(lost.shutdown.remote(), timeout=60)
    ray.kill(lost)


@pytest.mark.slow
def test_with_every_device_out_the_scorer_ends_the_campaign_in_one_plain_line(shared_ray):
    lost = _out_of_order_actor()
    scorer = scoring.Scorer([lost], {"vector_add": builtin().get("vector_add")},
                            max_in_flight_per_actor=2, answer_timeout_s=300)
    scorer.submit(("vector_add", 0), _vector_add_brood(1), known={}, recorded={})
    with pytest.raises(fatal.Fatal) as ended:
        _drain(scorer)
    assert fatal.cause(ended.value).startswith("every fitness device is out of the campaign")
    ray.get(lost.shutdown.remote(), timeout=60)
    ray.kill(lost)
