"""The campaign driver: every task's islands evolve at once on Ray, rows land in Parquet.

`run_campaign` checks the LLM endpoint (`evo.preflight`), wires the rooms together (tasks,
fitness actors, population actors, the budget ledger) and runs `Campaign.run`, the
generation loop of DESIGN.md; `main` is what `evo run` calls.
"""

from __future__ import annotations

import dataclasses
import datetime
import shlex
import time
from pathlib import Path

import ray

from evo import breaker, checkpoint, migration, preflight, provenance, results
from evo import config as config_lib
from evo import wiring
from evo.breaker import Breaker
from evo.budget import Spend, cap_reached
from evo.checkpoint import CampaignState
from evo.progress import Progress
from evo.ray_session import session as ray_session
from evo.scoring import Outcome, Scorer
from evo.summary import Summary, summarize
from operators.replay import ReplayMissError

ACTOR_TIMEOUT_S = wiring.ACTOR_TIMEOUT_S


class Campaign:
    """One campaign's live parts: its islands, fitness actors, ledger and results folder."""

    def __init__(self, config: config_lib.Config, parts: wiring.Parts, out: Path,
                 state: CampaignState, progress: Progress):
        self.config, self.parts, self.out, self.state = config, parts, out, state
        self.progress = progress
        self.tasks = {task.name: task for task in parts.tasks}
        self.scorer = Scorer(parts.fitness, self.tasks, config.fitness.max_in_flight_per_actor,
                             config.fitness.answer_timeout_s, parts.brood_timeout_s)
        self._session_started = time.monotonic()
        self._wall_before_s = state.spend.wall_seconds  # spent by earlier runs of this campaign
        self.breaker = Breaker(config.operators.max_consecutive_failures)
        self.trip: breaker.Trip | None = None
        self.stopped_by: str | None = None

    def run(self) -> CampaignState:
        """Runs generations until the last one, a budget cap or the LLM breaker; returns the
        final state.

            if nothing is scored yet: score each island's seed population (generation 0)
            for g in done+1 .. generations, while no cap is reached and the breaker holds:
                broods = every island selects parents and breeds offspring   (async: LLM)
                scored = broods scored on the fitness actors as they arrive  (overlaps LLM)
                each island replaces its population and logs; g's rows are written
                every migration_interval generations the best move along the ring
                checkpoint (after migration, so a resume never replays half a step)
                the breaker looks at g's LLM calls
        """
        if self.state.generation_done < 0:
            self._step(0, self._seeds())
        while self.state.generation_done < self.config.search.generations:
            self.stopped_by = (breaker.STOPPED_BY if self.trip
                               else cap_reached(self.config.budget, self._spend()))
            if self.stopped_by:
                break
            generation = self.state.generation_done + 1
            self._step(generation, self._make_offspring(generation))
        if self.trip:  # also when it tripped on the last generation: its calls failed
            self.stopped_by = breaker.STOPPED_BY
        return self.state

    def _step(self, generation: int, broods: dict) -> None:
        started = time.monotonic()
        outcome = self._evaluate(generation, broods)
        self._replace_and_log(generation, outcome)
        rows, llm_calls = self._write(generation, outcome)
        self._migrate(generation)
        self._checkpoint(generation, outcome, time.monotonic() - started)
        self.trip = self.trip or self.breaker.observe(generation, llm_calls)
        if generation == 0:
            self.progress.seeds_scored(outcome.broods)
        else:
            self.progress.generation_done(generation, rows, llm_calls)

    def _seeds(self) -> dict:
        return {key: island.seeds.remote() for key, island in self.parts.islands.items()}

    def _make_offspring(self, generation: int) -> dict:
        return {key: island.breed.remote(generation) for key, island in self.parts.islands.items()}

    def _evaluate(self, generation: int, broods: dict) -> Outcome:
        # A part written before a kill, but not checkpointed: its answers are reused so the
        # redone generation's rows are identical.
        recorded = {(row["task"], row["candidate_id"]): results.evaluation_from_row(row)
                    for row in results.read_rows(self.out / "evaluations", generation)}
        return self.scorer.score(broods, self.state.scored, recorded,
                                 breeding_is_waiting=self.config.operators.mode != "offline",
                                 on_result=self.progress.evaluated)

    def _replace_and_log(self, generation: int, outcome: Outcome) -> None:
        pending = [self.parts.islands[key].replace.remote(
            generation, [(s.candidate, s.evaluation) for s in scored])
            for key, scored in outcome.broods.items()]
        ray.get(pending, timeout=ACTOR_TIMEOUT_S)

    def _write(self, generation: int, outcome: Outcome) -> tuple[list[dict], dict]:
        """Writes the generation's evaluation and LLM-call parts; returns the evaluation rows
        and the call rows per island key."""
        name, seed = self.config.campaign.name, self.config.campaign.seed
        keys = sorted(self.parts.islands)
        drained = ray.get([self.parts.islands[key].drain_calls.remote() for key in keys],
                          timeout=ACTOR_TIMEOUT_S)
        calls = {key: sorted(rows, key=lambda call: call["sample_index"])  # not arrival order
                 for key, rows in zip(keys, drained)}
        if generation == 0:  # seeds are the starting point, not offspring: no rows
            return [], {}
        rows = [results.evaluation_row(name, self.tasks[key[0]], s.candidate, s.evaluation,
                                       s.reused, seed)
                for key in keys for s in outcome.broods[key]]
        call_rows = [results.llm_call_row(name, task, island, generation, call)
                     for (task, island) in keys for call in calls[(task, island)]]
        results.write_part(self.out / "evaluations", generation, rows, results.EVALUATION_SCHEMA)
        results.write_part(self.out / "llm_calls", generation, call_rows,
                           results.LLM_CALL_SCHEMA)
        return rows, calls

    def _migrate(self, generation: int) -> None:
        search = self.config.search
        if not migration.due(generation, search.migration_interval):
            return
        for task in self.tasks:
            ring = [self.parts.islands[(task, island)] for island in range(search.islands)]
            migration.migrate(ring, search.migrants, ACTOR_TIMEOUT_S)

    def _checkpoint(self, generation: int, outcome: Outcome, step_s: float) -> None:
        keys = sorted(self.parts.islands)
        states = ray.get([self.parts.islands[key].state.remote() for key in keys],
                         timeout=ACTOR_TIMEOUT_S)
        spend = dataclasses.replace(self._spend(),
                                    gpu_seconds=self.state.spend.gpu_seconds + outcome.gpu_seconds)
        candidates = sum(len(scored) for scored in outcome.broods.values())
        self.state = CampaignState(
            generation_done=generation, islands=dict(zip(keys, states)),
            scored={**self.state.scored, **outcome.new}, spend=spend,
            candidates=self.state.candidates + candidates,
            engine_overhead_s=self.state.engine_overhead_s + max(0.0, step_s - outcome.waiting_s))
        checkpoint.save(self.out, self.state)

    def _spend(self) -> Spend:
        """Returns what the campaign has used, this session's wall time included."""
        ledger = ({"spent_usd": 0.0, "spent_tokens": 0, "stopped_by": None}
                  if self.parts.ledger is None
                  else ray.get(self.parts.ledger.snapshot.remote(), timeout=ACTOR_TIMEOUT_S))
        wall_s = self._wall_before_s + time.monotonic() - self._session_started
        return Spend(usd=ledger["spent_usd"], tokens=ledger["spent_tokens"],
                     gpu_seconds=self.state.spend.gpu_seconds, wall_seconds=wall_s,
                     refused_by=ledger["stopped_by"])


def run_campaign(config: config_lib.Config, out: Path, resume: bool = False,
                 address: str | None = None, fitness_actors=None,
                 check_endpoint: bool = True) -> Summary:
    """Runs (or, with `resume`, continues) the campaign `config` into `out`; returns its Summary.

    Everything that can be checked before Ray starts is, cheapest first: the folder, the LLM
    endpoint (unless `check_endpoint` is False) and the tasks; a failed check raises
    ConfigError and writes nothing. `fitness_actors`: FitnessActor handles to score on,
    shared with the caller (a sweep, a test session) and left running; by default the
    campaign starts and stops its own.
    """
    started = time.monotonic()
    out = Path(out)
    _check_folder(config, out, resume)
    if check_endpoint:
        preflight.check(config)
    tasks = config_lib.resolve_tasks(config)
    state = _prepare_folder(out, resume)
    with ray_session(address):
        with wiring.start(config, tasks, state, fitness_actors) as parts:
            if (out / "campaign.json").exists():
                provenance.check_device(out, parts.device)
            else:
                provenance.write(out, config, parts.device)
            with Progress([task.name for task in tasks], config.search.generations,
                          parts.backend,
                          sandboxed=config.fitness.sandbox != "off") as progress:
                campaign = Campaign(config, parts, out, state, progress)
                final = campaign.run()
    return summarize(config, out, final, campaign.stopped_by, campaign.trip, parts.backend,
                     time.monotonic() - started)


def _check_folder(config: config_lib.Config, out: Path, resume: bool) -> None:
    """Raises ConfigError unless `out` is free (or, with `resume`, holds this campaign)."""
    if resume:
        provenance.check_resumable(out, config)
    elif (out / "campaign.json").exists():
        raise config_lib.ConfigError(f"{out} already holds a campaign; pass --resume to "
                                     "continue it, or choose another --out")


def _prepare_folder(out: Path, resume: bool) -> CampaignState:
    """Creates the results folder's layout; returns the state to start from."""
    folders = [out / "evaluations", out / "llm_calls", out / "checkpoint", out / "figures"]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    results.remove_temporaries(folders)
    return (checkpoint.load(out) if resume else None) or CampaignState()


def main(config_path, out=None, resume: bool = False, overrides=(), address=None,
         check_endpoint: bool = True) -> Summary:
    """`evo run`: loads the config, runs the campaign, prints the summary."""
    config = config_lib.load(config_path, overrides)
    if out is None:
        if resume:
            raise config_lib.ConfigError("--resume needs --out DIR (the campaign to continue)")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path("results") / f"{config.campaign.name}-{stamp}"
    try:
        summary = run_campaign(config, Path(out), resume=resume, address=address,
                               check_endpoint=check_endpoint)
    except ReplayMissError as error:  # the replayed campaign asked something never recorded
        raise config_lib.ConfigError(f"operators.replay_from: {error}") from None
    command = ["evo", "run", str(config_path), "--out", str(out), "--resume"]
    command += [part for override in overrides for part in ("--set", override)]
    command += ["--address", address] if address else []
    print(summary.text(resume_command=shlex.join(command)))
    return summary
