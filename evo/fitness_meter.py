"""fitness_meter.jsonl: where a campaign's scoring time went, a line per run of it.

A campaign's rows say how long each candidate's stages took, not what the fitness actors
spent around them: waiting for a worker's start-up, for the device while a baseline held it,
GEAK-eval's own harness runs, recordings of timing code. Those are what bound a campaign's
evaluations a minute, and a campaign cut short by its budget or a signal is where one asks.
So every run of `evo run` appends, as it ends, each fitness actor's `Evaluator.stats()`
(`fitness.actor.FitnessService.stats`): its request counts and seconds by kind, its device
lock's waits, its workers' start-ups. They count from the actor's start: a run's own, as
`evo run` starts its actors, unless actors were lent to it (`run_campaign(fitness_actors=)`).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import ray

FILE = "fitness_meter.jsonl"


def record(out: Path, fitness: list, started: datetime.datetime, timeout_s: float) -> None:
    """Appends one line to `out`/fitness_meter.jsonl: the run's start and end and each
    fitness actor's stats (None for one that did not answer within `timeout_s`: dead,
    or hung)."""
    asked = [actor.stats.remote() for actor in fitness]
    ready, _ = ray.wait(asked, num_returns=len(asked), timeout=timeout_s) if asked else ([], [])
    stats = []
    for ref in asked:
        try:
            stats.append(ray.get(ref, timeout=0) if ref in ready else None)
        except ray.exceptions.RayError:  # an actor that died answers with its error
            stats.append(None)
    line = {"started_at": started.isoformat(),
            "ended_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "actors": stats}
    with open(out / FILE, "a") as file:
        file.write(json.dumps(line, default=str) + "\n")


def read(folder: Path | str) -> list[dict]:
    """Returns the campaign folder's runs, oldest first (none before the file existed)."""
    path = Path(folder) / FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
