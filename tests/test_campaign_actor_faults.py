"""Actors killed mid-campaign (kill -9 by pid) are replaced and the rows come out unchanged.

Real campaigns on the test's Ray, each starting its own fitness actor; a thread finds an
actor's process by its title (`ray::FitnessService...`, `ray::Population...`) in /proc and
kills it with SIGKILL while the campaign runs. The finished campaign must hold exactly the
rows (task, island, generation, candidate id, and what was found) of a clean run with the
same seed, and campaign.json must count the replacement. The answer deadline is shown on
the scorer alone, with stand-in actors that answer late (no real actor hangs on cue).
"""

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import ray

from evo import actor_faults, campaign, checkpoint, config as config_lib, fatal, scoring
from evo.records import Evaluation, Task, make_candidate

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

GENERATIONS = 4
KEY = ["task", "island", "generation", "candidate_id"]
FOUND = ["correct", "reused", "failure_kind", "operator", "parent_ids"]


def _config(**search):
    return config_lib.from_dict({
        "campaign": {"name": "faults", "tasks": ["vector_add"], "seed": 5},
        "search": {"generations": GENERATIONS, "population": 3, "offspring": 4, "islands": 2,
                   "migration_interval": 2, **search},
        "operators": {"mode": "offline"},
        "fitness": {"device": "interpreter", "workers": 2},
        "budget": {"max_wall_seconds": 240}})


def _rows(folder: Path) -> pd.DataFrame:
    frame = pd.read_parquet(folder / "evaluations", columns=KEY + FOUND)
    frame["parent_ids"] = frame["parent_ids"].map(tuple)
    return frame.sort_values(KEY, kind="stable").reset_index(drop=True)


def _lost_and_extra(rows: pd.DataFrame, reference: pd.DataFrame) -> tuple[int, int]:
    """Returns how many of the reference's rows are missing and how many are not in it."""
    have = rows[KEY].value_counts()
    want = reference[KEY].value_counts()
    both = pd.concat([have, want], axis=1).fillna(0)
    difference = both.iloc[:, 0] - both.iloc[:, 1]
    return int(-difference[difference < 0].sum()), int(difference[difference > 0].sum())


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _ours(pid: int) -> bool:
    """True if `pid` descends from this test process (its Ray's raylet started it): other
    Ray sessions on this machine are left alone."""
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


def _pids(title: str) -> set[int]:
    """Returns our processes whose command line (a Ray worker's title) starts with `title`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if ((entry / "cmdline").read_bytes().startswith(title.encode())
                        and _ours(int(entry.name))):
                    found.add(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass  # gone meanwhile
    return found


def _replacements(out: Path) -> dict:
    try:
        return json.loads((out / "campaign.json").read_text()).get("actor_replacements", {})
    except (OSError, ValueError):
        return {}


class Killer(threading.Thread):
    """Once `out` holds a part of generation `after`, kills with SIGKILL `kills` processes
    titled `title` that were not there before, one at a time, the oldest first (a
    replacement once the originals are gone), and times each kill until campaign.json
    counts its replacement."""

    def __init__(self, out: Path, title: str, role: str, kills: int, after: int):
        super().__init__(daemon=True)
        self.out, self.title, self.role, self.kills, self.after = out, title, role, kills, after
        self.before = _pids(title)
        self.replaced_after_s: list[float] = []
        self.killed: list[int] = []
        self.error: str | None = None
        self.campaign_ended = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 180
        try:
            while not list((self.out / "evaluations").glob(f"part-{self.after:05d}-*.parquet")):
                self._check(deadline, f"the campaign never wrote generation {self.after}")
            for _ in range(self.kills):
                fresh = set()
                while not fresh:
                    fresh = _pids(self.title) - self.before - set(self.killed)
                    self._check(deadline, f"no new {self.title} process appeared")
                pid = min(fresh)
                counted = _replacements(self.out).get(self.role, 0)
                os.kill(pid, signal.SIGKILL)
                killed_at = time.monotonic()
                self.killed.append(pid)
                while _replacements(self.out).get(self.role, 0) == counted:
                    if self.campaign_ended.wait(0.02):
                        return  # not replaced: the campaign stopped (the test says if it should)
                self.replaced_after_s.append(time.monotonic() - killed_at)
        except AssertionError as error:
            self.error = str(error)

    def _check(self, deadline: float, what: str) -> None:
        assert time.monotonic() < deadline and not self.campaign_ended.wait(0.02), what


@pytest.fixture(scope="module")
def reference(interpreter_fitness, tmp_path_factory) -> pd.DataFrame:
    """The rows of a clean run with the same seed."""
    out = tmp_path_factory.mktemp("clean") / "run"
    summary = campaign.run_campaign(_config(), out, fitness_actors=interpreter_fitness)
    assert summary.generations_done == GENERATIONS
    return _rows(out)


def _run_with_kills(out: Path, title: str, role: str, kills: int, after: int = 1, **search):
    killer = Killer(out, title, role, kills, after)
    killer.start()
    try:
        return campaign.run_campaign(_config(**search), out), killer
    finally:
        killer.campaign_ended.set()
        killer.join(timeout=30)
        assert killer.error is None, killer.error


@pytest.mark.parametrize("title, role, after, kills", [
    ("ray::FitnessService", "fitness", 1, 1),
    ("ray::Population", "population", 1, 1),
    ("ray::Population", "population", 2, 2),  # both islands, around their migration
])
def test_killed_actor_is_replaced_and_the_rows_are_a_clean_runs(reference, shared_ray, tmp_path,
                                                                title, role, after, kills, capsys):
    out = tmp_path / "run"

    summary, killer = _run_with_kills(out, title, role, kills, after)

    assert summary.generations_done == GENERATIONS and summary.stopped_by is None
    assert len(killer.killed) == kills and len(killer.replaced_after_s) == kills
    assert _replacements(out) == {"fitness": 0, "population": 0, role: kills}
    lines = [line for line in capsys.readouterr().out.splitlines() if "died (" in line]
    assert len(lines) == kills and all("; replaced, " in line for line in lines), lines
    rows = _rows(out)
    with capsys.disabled():
        print(f"\n{kills} {role} actor(s) killed after generation {after}: rows lost/extra "
              f"{_lost_and_extra(rows, reference)}, replacement line "
              f"{', '.join(f'{s:.2f}' for s in killer.replaced_after_s)} s after the kill:\n  "
              + "\n  ".join(lines))
    assert _lost_and_extra(rows, reference) == (0, 0)
    pd.testing.assert_frame_equal(rows, reference)


def test_fitness_actor_that_keeps_dying_stops_the_campaign_with_one_line(shared_ray, tmp_path):
    out = tmp_path / "run"

    with pytest.raises(fatal.CampaignFailed) as stopped:  # a fatal cause: one plain line
        _run_with_kills(out, "ray::FitnessService", "fitness", kills=actor_faults.MAX_DEATHS,
                        generations=40)

    assert isinstance(stopped.value.__cause__, actor_faults.ActorsKeepDying)
    reason = stopped.value.cause
    print(f"\n{reason}")
    assert "\n" not in reason and reason.startswith("fitness actors keep dying (3 deaths within")
    assert _replacements(out)["fitness"] == actor_faults.MAX_DEATHS - 1
    kept = checkpoint.load(out)
    assert kept is not None and kept.furthest_generation >= 1  # the last checkpoint stands


@ray.remote(num_cpus=0)
class Judge:
    """Answers `evaluate` after `pause_s` (a hung actor: a pause longer than the deadline)."""

    def __init__(self, pause_s: float):
        self.pause_s = pause_s

    async def evaluate(self, task, candidate) -> Evaluation:
        await asyncio.sleep(self.pause_s)
        return Evaluation(candidate_id=candidate.id, stage_reached="timed", call_ok=True,
                          correct=True)

    def ready(self) -> bool:
        return True


def test_fitness_actor_past_its_answer_deadline_is_replaced_and_its_work_scored_once(shared_ray):
    # Every judge, the replacement included, is started before the scorer's 3-s deadlines
    # run: on a loaded 2-core machine an actor's start alone once took longer, and the
    # replacement was replaced in its turn.
    judges, spare, replaced = [Judge.remote(0.05), Judge.remote(3600)], Judge.remote(0.05), []
    ray.get([judge.ready.remote() for judge in (*judges, spare)], timeout=120)

    def replace(index, cause, resubmitted):
        replaced.append((index, cause, resubmitted))
        ray.kill(judges[index])
        judges[index] = spare
        return spare

    task = Task(name="demo", suite="test", instruction="", reference=None,
                baseline_source="def demo(x):\n    return x\n", entry_point="demo",
                make_inputs=None, cases=(), interpreter_cases=(), tolerance={}, flops=None,
                bytes=None, difficulty=1)
    scorer = scoring.Scorer(list(judges), {"demo": task},
                            max_in_flight_per_actor=2, answer_timeout_s=3, replace=replace)
    brood = [make_candidate("demo", f"def demo(x):\n    return x + {slot}\n", island=0)
             for slot in range(6)]
    scorer.submit(("demo", 0), brood, known={}, recorded={})
    done, deadline = {}, time.monotonic() + 60
    while scorer.busy():
        assert time.monotonic() < deadline, "the scorer never finished"
        done.update(scorer.collect(scoring.ready(scorer.refs())))

    assert replaced == [(1, "no answer within 3 s", 2)]
    outcome = done[("demo", 0)]
    assert [s.evaluation.candidate_id for s in outcome.scored] == [c.id for c in brood]
    assert all(s.evaluation.correct for s in outcome.scored) and len(outcome.new) == 6
    for judge in judges:
        ray.kill(judge)
