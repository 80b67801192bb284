"""The campaign driver: every task's islands evolve at once on Ray, rows land in Parquet.

`run_campaign` checks what it can before Ray starts, wires the rooms together (`evo.wiring`)
and runs `Campaign.run`, the generation loop of docs/design.md; `main` is what `evo run` calls.

There is no global barrier: the driver is one event loop over Ray ObjectRefs (broods being
bred, evaluations in flight), and each island starts its next generation as soon as its own
brood is scored, so a slow task, LLM answer or candidate holds up only its own island while
the fitness actors stay fed by the others. Islands of one task meet only at migration
generations. An island's candidates depend only on its seed, so runs and resumes give the
same rows whatever the timing.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import shlex
import sys
import time
from pathlib import Path

import ray

from evo import (actor_faults, breaker, checkpoint, ending, fatal, fitness_meter, migration,
                 preflight, provenance, results, run_log, scoring, stopping, wiring)
from evo import config as config_lib
from evo.budget import Spend, cap_reached
from evo.checkpoint import CampaignState, IslandState
from evo.ending import Summary, summarize
from evo.progress import Progress
from evo.ray_session import session as ray_session
from evo.scoring import Outcome, Scored, Scorer
from operators.replay import ReplayMissError

ACTOR_TIMEOUT_S = wiring.ACTOR_TIMEOUT_S
ANSWER_PROBE_S = 30.0
"""How long an island whose ring lost an actor may take to say it is alive."""
EXIT_LLM_FAILURES = 3
"""`evo run`'s exit status when the campaign stopped because its LLM calls kept failing
(2 is a bad config, an unusable endpoint or a failed check before anything ran)."""


class Campaign:
    """One campaign's live parts: its islands, fitness actors, ledger and results folder."""

    def __init__(self, config: config_lib.Config, parts: wiring.Parts, out: Path,
                 state: CampaignState, progress: Progress):
        self.config, self.parts, self.out = config, parts, out
        self.state = dataclasses.replace(state, islands={
            key: state.islands.get(key, IslandState()) for key in sorted(parts.islands)})
        self.progress = progress
        self.tasks = {task.name: task for task in parts.tasks}
        self.replacements = actor_faults.Replacements(out)
        self.scorer = Scorer(parts.fitness, self.tasks, config.fitness.max_in_flight_per_actor,
                             config.fitness.answer_timeout_s, on_result=progress.evaluated,
                             replace=self._replace_fitness)
        self._started = self._noted = time.monotonic()  # _noted: when waits were last named
        self._wall_before_s = state.spend.wall_seconds  # spent by earlier runs of this campaign
        self._gpu_seconds, self._candidates = state.spend.gpu_seconds, state.candidates
        self._overhead_before_s, self._waiting_s = state.engine_overhead_s, 0.0
        self._known = {key: dict(island.known) for key, island in self.state.islands.items()}
        self._breeding: dict = {}  # ObjectRef of breed/seeds -> (island key, generation, deadline)
        self._running: dict = {}  # island key -> generation its brood being scored belongs to
        self._seeds: dict = {}  # island key -> its seeds, until its task's islands all have theirs
        self._met: dict = {}  # island key -> generation it finished, waiting for its ring
        self._salvaged: dict = {}  # (island key, generation) -> verdicts had before a death
        self.breaker = breaker.Breaker(config.operators.max_consecutive_failures)
        self.trip: breaker.Trip | None = None
        self.stopped_by: str | None = None

    def run(self) -> CampaignState:
        """Runs every island to the last generation, a budget cap or the LLM breaker (both let
        the generations under way finish); returns the final state. A stop signal raises
        `stopping.Stopped` between two steps.

            every island at once, each on its own:
                if nothing is scored yet: its seeds are scored (once for its task's islands)
                    and written as generation 0
                for g in done+1 .. generations, while no cap is reached and the breaker holds:
                    brood = the island selects parents and breeds offspring   (async: LLM)
                    scored = its brood scored in the queue all islands share (least-loaded)
                    it replaces its population and logs; its rows of g are written; the
                        breaker looks at its LLM calls of g
                    at a migration generation, once its ring finished g: the best migrate
                    checkpoint (after migration, so a resume never replays half a step)
        """
        for key in self.state.islands:
            self._next_generation(key)
        while self._breeding or self.scorer.busy():
            stopping.check()  # a stop signal: unwind here, between steps, nothing half written
            ready = self._wait()
            for ref in ready:
                if ref in self._breeding:
                    self._score(ref)
            for key, outcome in self.scorer.collect(ready).items():
                if isinstance(key, str):  # a task's seeds, scored once for all its islands
                    self._seeded(key, outcome)
                else:
                    self._conclude(key, generation=self._running.pop(key), outcome=outcome)
            self._check_breeding_deadlines()
            self._note_waits()
        if self.trip:  # also when it tripped on the last generation: its calls failed
            self.stopped_by = breaker.STOPPED_BY
        return self.state

    def _next_generation(self, key) -> None:
        """Starts the island's next generation, unless it is done or the campaign stops."""
        done = self.state.islands[key].generation_done
        if done >= self.config.search.generations:
            return
        if done >= 0:  # the seeds are always scored: they are where a resume starts
            self.stopped_by = self.stopped_by or (
                breaker.STOPPED_BY if self.trip
                else cap_reached(self.config.budget, self._spend()))
            if self.stopped_by:
                return
        island, generation = self.parts.islands[key], done + 1
        ref = island.seeds.remote() if generation == 0 else island.breed.remote(generation)
        self._breeding[ref] = (key, generation, time.monotonic() + self.parts.brood_timeout_s)

    def _wait(self) -> list:
        """Returns the broods and evaluations that came back; books the time spent waiting
        on fitness (or on LLM-bound breeding) apart from the engine's own."""
        started = time.monotonic()
        useful = self.scorer.in_flight() or (self._breeding and self.config.operators.mode
                                             != "offline")
        ready = scoring.ready(list(self._breeding) + self.scorer.refs())
        if useful:
            self._waiting_s += time.monotonic() - started
        return ready

    def _score(self, ref) -> None:
        """Hands an island's brood to the scorer; seeds wait for their task's other islands."""
        key, generation, _ = self._breeding.pop(ref)
        try:
            brood = ray.get(ref, timeout=ACTOR_TIMEOUT_S)
        except actor_faults.DEATHS as error:
            self._rewind([key], actor_faults.why(error))
            return
        if generation == 0:
            self._seeds[key] = brood
            seeding = self._seeding(key[0])
            if all(member in self._seeds for member in seeding):
                recorded = {ident: evaluation for member in seeding
                            for ident, evaluation in self._recorded(member, 0).items()}
                self.scorer.submit(key[0], [c for m in seeding for c in self._seeds[m]], {},
                                   recorded)
            return
        self._running[key] = generation
        self.scorer.submit(key, brood, self._known[key], self._recorded(key, generation))

    def _recorded(self, key, generation: int) -> dict:
        """Returns candidate id -> Evaluation the island already had for `generation`: its
        part written before a kill but not checkpointed, or its brood scored before it died.
        They are taken, not scored again, so the redone generation's rows are identical."""
        recorded = {row["candidate_id"]: results.evaluation_from_row(row)
                    for row in results.read_rows(self.out / "evaluations", generation, key)}
        recorded.update(self._salvaged.pop((key, generation), {}))
        return recorded

    def _check_breeding_deadlines(self) -> None:
        """An island that breeds past its deadline is killed and rewound like a dead one."""
        now = time.monotonic()
        for ref, (key, _, deadline) in sorted(self._breeding.items(), key=lambda item: item[1]):
            if now > deadline:
                del self._breeding[ref]
                ray.kill(self.parts.islands[key], no_restart=True)
                self._rewind([key], f"no offspring within {self.parts.brood_timeout_s:.0f} s")

    def _note_waits(self) -> None:
        """Names in the progress each evaluation out longer than `note_wait_s`, what its
        island is and what it is doing (once a `note_wait_s` at most), so a campaign that
        ends on one island's straggler says what it waits for instead of going quiet."""
        after_s = self.config.fitness.note_wait_s
        if not after_s or time.monotonic() - self._noted < after_s:
            return
        lingering = self.scorer.lingering(after_s)
        if lingering:
            self._noted = time.monotonic()
            self.progress.waiting([(key, self._running.get(key, 0), candidate.id, out_s, doing)
                                   for key, candidate, out_s, doing in lingering])

    def _seeded(self, task: str, outcome: Outcome) -> None:
        """Concludes generation 0 of each island of `task` still seeding, with the verdicts
        on the seeds they share. A seed held by k islands is scored once and gets a row on
        each: `reused` on every island but the first of the ring that holds it (an island
        seeded before a kill holds what it knows), so rows count each island's candidates,
        fresh rows count evaluations, and a resumed run writes the rows of an unbroken one."""
        verdicts = {s.candidate.id: s.evaluation for s in outcome.scored}
        gpu_seconds = outcome.gpu_seconds
        held: set = set()  # seed ids an island earlier in the ring holds
        for key in self._ring(task):
            seeds = self._seeds.pop(key, None)
            if seeds is None:  # seeded in an earlier run of the campaign
                held.update(self._known[key])
                continue
            scored = []
            for seed in seeds:
                scored.append(Scored(seed, verdicts[seed.id], reused=seed.id in held))
                held.add(seed.id)
            self._conclude(key, 0, Outcome(
                scored, {seed.id: outcome.new[seed.id] for seed in seeds if seed.id in outcome.new},
                gpu_seconds))
            gpu_seconds = 0.0  # booked once

    def _ring(self, task: str) -> list:
        return [(task, island) for island in range(self.config.search.islands)]

    def _seeding(self, task: str) -> list:
        """Returns the task's islands whose seeds are not scored yet (after a kill, maybe
        not all of them)."""
        return [key for key in self._ring(task) if self.state.islands[key].generation_done < 0]

    def _conclude(self, key, generation: int, outcome: Outcome) -> None:
        """Replaces the island's population with its scored brood, writes its rows, shows
        the breaker its LLM calls; then the island meets its ring or goes on."""
        island = self.parts.islands[key]
        pairs = [(s.candidate, s.evaluation) for s in outcome.scored]
        try:
            _, calls = ray.get([island.replace.remote(generation, pairs),
                                island.drain_calls.remote()], timeout=ACTOR_TIMEOUT_S)
        except actor_faults.DEATHS as error:
            self._salvaged[key, generation] = outcome.new  # bred again, not scored again
            self._rewind([key], actor_faults.why(error))
            return
        calls = sorted(calls, key=lambda call: call["sample_index"])  # not arrival order
        self._known[key].update(outcome.new)
        self._gpu_seconds += outcome.gpu_seconds
        self._candidates += len(outcome.scored)
        rows = self._write(key, generation, outcome, calls)  # the seeds' too (generation 0)
        self.trip = self.trip or self.breaker.observe(generation, {key: calls})
        if generation == 0:
            self.progress.seeds_scored(key, rows)
        else:
            self.progress.island_done(key, generation, rows, calls)
        self._meet(key, generation)

    def _write(self, key, generation: int, outcome: Outcome, calls: list[dict]) -> list[dict]:
        """Writes the island's evaluation and LLM-call parts of `generation`; returns its rows."""
        name, seed = self.config.campaign.name, self.config.campaign.seed
        task, island = key
        rows = [results.evaluation_row(name, self.tasks[task], s.candidate, s.evaluation,
                                       s.reused, seed) for s in outcome.scored]
        call_rows = [results.llm_call_row(name, task, island, generation, call) for call in calls]
        results.write_part(self.out / "evaluations", generation, key, rows,
                           results.EVALUATION_SCHEMA)
        results.write_part(self.out / "llm_calls", generation, key, call_rows,
                           results.LLM_CALL_SCHEMA)
        return rows

    def _meet(self, key, generation: int) -> None:
        """At a migration generation, waits for the island's ring (its task's islands) to
        finish it too, then migrates the ring and pools what its islands have scored; then
        checkpoints and starts the next generation of each island that was waiting."""
        search = self.config.search
        ring = self._ring(key[0]) if migration.due(generation, search.migration_interval) else [key]
        self._met[key] = generation
        if any(self._met.get(member) != generation for member in ring):
            return  # the others are still on their way to this generation
        for member in ring:
            del self._met[member]
        try:
            if len(ring) > 1:
                migration.migrate([self.parts.islands[member] for member in ring],
                                  search.migrants, ACTOR_TIMEOUT_S)
            states = ray.get([self.parts.islands[member].state.remote() for member in ring],
                             timeout=ACTOR_TIMEOUT_S)
        except actor_faults.DEATHS as error:  # half a migration may have landed: all go back
            self._rewind(ring, actor_faults.why(error))
            return
        if len(ring) > 1:
            pooled: dict = {}
            for member in ring:  # in island order, so the pool does not depend on timing
                pooled = {**self._known[member], **pooled}
            for member in ring:
                self._known[member] = {**pooled, **self._known[member]}
        self._checkpoint(ring, generation, states)
        for member in ring:
            self._next_generation(member)

    def _rewind(self, keys: list, cause: str) -> None:
        """Puts islands `keys` back at their last checkpoint because an actor among them died
        of `cause` (or hung): each one that no longer answers is replaced, each is restored
        from its checkpoint and breeds its next generation again. Its rows come out as if
        nothing had died: the same RNG state breeds the same brood, and verdicts already had
        (a part written, a brood scored) are taken, not scored again."""
        dead = [key for key in keys if not _answers(self.parts.islands[key])]
        done = min(self.state.islands[key].generation_done for key in keys)
        again = (f"{keys[0][0]} island{'s' * (len(keys) > 1)} "
                 f"{', '.join(str(key[1]) for key in keys)} back at "
                 + (f"the generation-{done} checkpoint" if done >= 0 else "the start")
                 + f", generation {done + 1} bred again")
        for key in dead:
            self.replacements.replace(
                "population", f"population actor of {key[0]} island {key[1]}", cause,
                lambda key=key: (self.parts.new_island(key), again))
        try:
            ray.get([self.parts.islands[key].restore.remote(self.state.islands[key].population)
                     for key in keys if self.state.islands[key].population is not None],
                    timeout=ACTOR_TIMEOUT_S)
        except actor_faults.DEATHS as error:  # another died meanwhile (a node going down)
            self._rewind(keys, actor_faults.why(error))
            return
        for key in keys:
            self._known[key] = dict(self.state.islands[key].known)
            for waiting in (self._met, self._running, self._seeds):
                waiting.pop(key, None)
            self._next_generation(key)

    def _replace_fitness(self, index: int, cause: str, resubmitted: int):
        """Returns a fresh fitness actor in place of actor `index` (the scorer re-submits
        the `resubmitted` evaluations it held)."""
        return self.replacements.replace(
            "fitness", f"fitness actor {index}", cause,
            lambda: (self.parts.new_fitness_actor(index),
                     f"{resubmitted} evaluation{'s' * (resubmitted != 1)} re-submitted"))

    def _checkpoint(self, keys: list, generation: int, states: list) -> None:
        islands = dict(self.state.islands)
        for key, population in zip(keys, states):
            islands[key] = IslandState(generation, population, dict(self._known[key]))
        overhead_s = time.monotonic() - self._started - self._waiting_s
        self.state = CampaignState(
            islands=islands, spend=self._spend(), candidates=self._candidates,
            engine_overhead_s=self._overhead_before_s + max(0.0, overhead_s))
        checkpoint.save(self.out, self.state, {key[0] for key in keys})

    def _spend(self) -> Spend:
        """Returns what the campaign has used, this session's wall time included."""
        ledger = self.parts.ledger
        llm = {} if ledger is None else ray.get(ledger.snapshot.remote(), timeout=ACTOR_TIMEOUT_S)
        wall_s = self._wall_before_s + time.monotonic() - self._started
        return Spend(usd=llm.get("spent_usd", 0.0), tokens=llm.get("spent_tokens", 0),
                     gpu_seconds=self._gpu_seconds, wall_seconds=wall_s,
                     refused_by=llm.get("stopped_by"))


def _answers(actor) -> bool:
    """Returns True if `actor` answers within `ANSWER_PROBE_S`."""
    try:
        ray.get(actor.ready.remote(), timeout=ANSWER_PROBE_S)
    except actor_faults.DEATHS:
        return False
    return True


def run_campaign(config: config_lib.Config, out: Path, resume: bool = False,
                 address: str | None = None, fitness_actors=None,
                 check_endpoint: bool = True, continue_command=None) -> Summary:
    """Runs (or, with `resume`, continues) the campaign `config` into `out`; returns its Summary.

    Checked before Ray starts, cheapest first: the folder (free, writable, with room for a
    generation), the tasks, the generations file (`operators.generations_from`), the LLM
    endpoint (unless `check_endpoint` is False); a failed check raises ConfigError and
    writes nothing. Later, a fatal cause the user can fix raises
    fatal.CampaignFailed (traceback in DIR/evo-run.log); inside `stopping.listening`, a stop
    signal raises stopping.Stopped. `fitness_actors`: FitnessActor handles shared with the
    caller (a sweep, a test session) and left running; by default the campaign starts its own.
    A local Ray that dies under the campaign ends the process with one line on stderr
    (`_lost`), naming `continue_command()`, the command that continues (a callable).
    """
    started = time.monotonic()
    out = Path(out)
    _check_folder(config, out, resume)
    tasks = config_lib.resolve_tasks(config)
    rows = config.search.offspring * config.search.islands * len(tasks)
    preflight.check_results_folder(out, rows, run_log.RESERVE_BYTES)
    recorded = wiring.recorded_generations(config, tasks)
    if recorded is not None:
        print(f"generations from {recorded.report}", flush=True)
    if check_endpoint:
        preflight.check(config)
    state = _prepare_folder(out, resume)
    log = run_log.RunLog(out)
    on_lost = functools.partial(_lost, out, log, continue_command)
    try:
        campaign, backend = _run(config, out, tasks, state, address, fitness_actors, resume,
                                 recorded, on_lost)
    except stopping.Stopped as stop:
        ending.record(out, stop.signal.name, str(stop))
        raise
    except Exception as error:
        failed = fatal.failure(error, log)
        if failed is None:
            raise  # a bug: its traceback shows as usual (and is in the log)
        ending.record(out, ending.FATAL, failed.cause, [f"traceback in {failed.log}"])
        raise failed from error
    finally:
        log.release()
    summary = summarize(config, out, campaign.state, campaign.stopped_by, campaign.trip, backend,
                        time.monotonic() - started)
    ending.record_summary(out, summary)
    return summary


def _lost(out: Path, log: run_log.RunLog, continue_command, cause: str, logged: str) -> None:
    """Says that the local Ray died under the campaign in `out`: `logged` into its log, the
    cause into campaign.json's "stop", and the one line on stderr (then `ray_watch` exits)."""
    where = log.write(logged)
    ending.record(out, ending.FATAL, cause, [f"traceback in {where}"])
    _say(cause, out, continue_command() if continue_command else "the same command", where)


def _run(config: config_lib.Config, out: Path, tasks: list, state: CampaignState,
         address: str | None, fitness_actors, resume: bool, recorded,
         on_lost) -> tuple[Campaign, str]:
    """Starts Ray and the campaign's actors, runs the campaign, stops them; returns the
    finished Campaign and where fitness ran. A resumed campaign's progress starts from what
    its checkpoint covers (`_resumed`); `recorded`: the generator's file replies, or None;
    `on_lost`: what to do if the local Ray dies (`ray_session`)."""
    with ray_session(address, on_lost):
        with wiring.start(config, tasks, state, fitness_actors, recorded) as parts:
            stopping.check()  # a signal during the start-up stops before anything is written
            if (out / "campaign.json").exists():
                provenance.check_device(out, parts.device)
            else:
                provenance.write(out, config, parts.device, parts.tasks)
            progress = Progress([task.name for task in parts.tasks], config.search.generations,
                                parts.backend, sandboxed=config.fitness.sandbox != "off",
                                islands=config.search.islands)
            if resume:
                _resumed(progress, config, out, state)
            started = datetime.datetime.now(datetime.timezone.utc)
            with progress:
                campaign = Campaign(config, parts, out, state, progress)
                try:
                    campaign.run()
                finally:
                    _record_meter(out, parts.fitness, started)
    return campaign, parts.backend


METER_WAIT_S = 5.0
"""How long a run's end waits for its fitness actors' stats (a stop signal must end the
campaign within 30 s, and the actors' shutdown waits `wiring.STOP_WAIT_S` after this)."""


def _record_meter(out: Path, fitness: list, started: datetime.datetime) -> None:
    """Appends this run's fitness stats to fitness_meter.jsonl (`fitness_meter.record`);
    a Ray that is going away or a folder that cannot be written loses that line only."""
    try:
        fitness_meter.record(out, fitness, started, METER_WAIT_S)
    except (ray.exceptions.RayError, OSError):
        pass


_PROGRESS_COLUMNS = ["task", "generation", "candidate_id", "correct", "speedup", "latency_us",
                    "timing_meaningful", "reused", "failure_kind", "compile_s", "check_s",
                    "bench_s"]


def _resumed(progress: Progress, config: config_lib.Config, out: Path,
             state: CampaignState) -> None:
    """Books into `progress` the rows and LLM calls of the generations the checkpoint covers,
    and has it say what is resumed."""
    done = {key: island.generation_done for key, island in state.islands.items()
            if key[0] in progress.tasks}
    rows = results.checkpointed_rows(out / "evaluations", done, results.EVALUATION_SCHEMA,
                                     _PROGRESS_COLUMNS)
    calls = results.checkpointed_rows(out / "llm_calls", done, results.LLM_CALL_SCHEMA,
                                      ["task", "cost_usd", "failure_kind", "error", "finished_at"])
    progress.resumed(config.campaign.name, done, rows, calls)


def _check_folder(config: config_lib.Config, out: Path, resume: bool) -> None:
    """Raises ConfigError unless `out` is free (or, with `resume`, holds this campaign)."""
    if resume:
        provenance.check_resumable(out, config)
    elif (out / "campaign.json").exists():
        raise config_lib.ConfigError(f"{out} already holds a campaign; pass --resume to "
                                     "continue it, or choose another --out")


def _prepare_folder(out: Path, resume: bool) -> CampaignState:
    """Creates the results folder's layout; returns the state to start from."""
    folders = [out / "evaluations", out / "llm_calls", out / "checkpoint",
               out / "checkpoint" / "tasks", out / "figures"]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    results.remove_temporaries(folders)
    return (checkpoint.load(out) if resume else None) or CampaignState()


def main(config_path, out=None, resume: bool = False, overrides=(), address=None,
         check_endpoint: bool = True, debug: bool = False) -> int:
    """`evo run`: loads the config, runs the campaign, prints the summary; returns the exit
    status (`EXIT_LLM_FAILURES` if the breaker stopped it).

    A stop signal or a fatal cause is one line on stderr instead (what ended it, what the
    last checkpoint kept, the command that continues) and its exit status; `debug` prints a
    fatal cause's traceback above its line.
    """
    config = config_lib.load(config_path, overrides)
    if out is None:
        if resume:
            raise config_lib.ConfigError("--resume needs --out DIR (the campaign to continue)")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path("results") / f"{config.campaign.name}-{stamp}"
    out = Path(out)
    again = functools.partial(_continue_command, config_path, out, overrides, address)
    with stopping.listening():
        try:
            summary = run_campaign(config, out, resume=resume, address=address,
                                   check_endpoint=check_endpoint, continue_command=again)
        except ReplayMissError as error:  # the replayed campaign asked something never recorded
            raise config_lib.ConfigError(f"operators.replay_from: {error}") from None
        except stopping.Stopped as stop:
            _say(f"campaign stopped by {stop.signal.name}", out, again(), log=None)
            return stop.exit_status
        except fatal.CampaignFailed as failed:
            if debug:
                print(failed.traceback, file=sys.stderr, end="")
            _say(failed.cause, out, again(), log=failed.log)
            return failed.exit_status
    print(summary.text(resume_command=again()))
    return EXIT_LLM_FAILURES if summary.failed else 0


def _say(what: str, out: Path, command: str, log) -> None:
    """Prints the one line that ends a stopped or failed campaign."""
    print(fatal.line(what, checkpoint.load(out), command, log), file=sys.stderr, flush=True)


def _continue_command(config_path, out: Path, overrides, address) -> str:
    """Returns the `evo run` that continues the campaign in `out` (`--resume` once
    campaign.json is written; before, the same run again)."""
    command = ["evo", "run", str(config_path), "--out", str(out)]
    command += ["--resume"] if (out / "campaign.json").exists() else []
    command += [part for override in overrides for part in ("--set", override)]
    command += ["--address", address] if address else []
    return shlex.join(command)
