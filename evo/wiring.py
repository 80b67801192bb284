"""Starting a campaign's Ray parts: fitness actors, the budget ledger, an island per (task, island).

`start` is a context manager: whatever it started is stopped when the campaign ends, even on
an error, so a shared Ray (tests, a user's cluster) is left as it was found. An actor that
dies is replaced through `Parts` (`new_fitness_actor`, `new_island`): the same options and
placement, and the replacement is stopped at the end like the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from evo import fatal
from evo.budget import LedgerActor, LedgerProxy
from evo.checkpoint import CampaignState
from evo.config import Config, ConfigError
from evo.population import PopulationActor
from evo.records import Task

ACTOR_TIMEOUT_S = 300.0
"""Longest wait for an actor's bookkeeping call (restore, replace, state, migration)."""
OFFLINE_BROOD_TIMEOUT_S = 600.0
"""Longest an island may take to breed offline (AST rewrites: milliseconds in practice)."""


@dataclasses.dataclass(frozen=True)
class Parts:
    """A running campaign's actors.

    Attributes:
      device: what campaign.json records about the fitness device.
      fitness: the FitnessActor handles (a replacement takes its index).
      islands: (task name, island) -> PopulationActor handle.
      ledger: the shared LLM budget actor (None offline).
      brood_timeout_s: longest an island may take to breed one generation.
      fitness_specs: how to start each fitness actor again (`fitness.actor.ActorSpec`).
      island_starters: (task name, island) -> a call that starts that island's actor.
      owned, others: the fitness actors and the other actors `start` stops at the end.
    """

    tasks: tuple[Task, ...]
    device: dict
    backend: str
    fitness: list
    islands: dict
    ledger: object
    brood_timeout_s: float
    fitness_specs: tuple
    island_starters: dict
    owned: list
    others: list

    def new_fitness_actor(self, index: int):
        """Kills fitness actor `index` (dead or hung) and returns a fresh one like it."""
        old, new = self.fitness[index], self.fitness_specs[index].start()
        ray.kill(old, no_restart=True)
        if old in self.owned:
            self.owned.remove(old)
        self.owned.append(new)
        self.fitness[index] = new
        return new

    def new_island(self, key):
        """Kills island `key`'s actor (dead or hung) and returns a fresh one in its place,
        in its first state: the caller restores it from the island's checkpoint."""
        old, new = self.islands[key], self.island_starters[key]()
        ray.kill(old, no_restart=True)
        self.others.remove(old)
        self.others.append(new)
        self.islands[key] = new
        return new


@contextlib.contextmanager
def start(config: Config, tasks: list[Task], state: CampaignState, fitness_actors=None,
          recorded=None):
    """Yields the started Parts, restored from `state`; stops them afterwards.

    `fitness_actors` (FitnessActor handles) are used instead of starting new ones and are
    left running: a sweep or a test suite pays the workers' cold start once. `recorded`
    (`recorded_generations(config, tasks)`) answers the generator role.
    """
    import fitness as scoring

    fitness, owned, others = list(fitness_actors or ()), [], []
    try:
        if not fitness:
            try:
                fitness = owned = scoring.start_actors(config.fitness)
            except scoring.DeviceError as error:
                raise ConfigError(f"fitness.device: {error}") from None
        # The fitness actors sit where the GPUs are (maybe not this node): ask them.
        device = _fitness_device(fitness[0])
        tasks = _runnable(tasks, device.backend, named=bool(config.campaign.tasks))
        if config.operators.mode == "offline":
            _say_unvaried(tasks, device.backend)
        ledger = _ledger(config, state)
        others += [ledger] if ledger is not None else []
        client = None
        if config.operators.mode != "offline":
            client = llm_client(config, LedgerProxy(ledger))
        if recorded is not None:
            from operators.recorded_generations import FileGenerator

            client = FileGenerator(recorded, others=client)
        knowledge = _knowledge(config, device)
        placements = itertools.cycle(_island_placements())
        starters = {(task.name, island): functools.partial(
            PopulationActor.options(scheduling_strategy=next(placements)).remote,
            _without_callables(task), island, config, device.backend, client, knowledge)
            for task in tasks for island in range(config.search.islands)}
        islands = {key: start_island() for key, start_island in starters.items()}
        others += islands.values()
        restoring = [islands[key].restore.remote(saved.population)
                     for key, saved in state.islands.items() if saved.population is not None]
        specs = ray.get([actor.spec.remote() for actor in fitness], timeout=ACTOR_TIMEOUT_S)
        ray.get(restoring + [island.ready.remote() for island in islands.values()],
                timeout=ACTOR_TIMEOUT_S)
        yield Parts(tuple(tasks), {"backend": device.backend, "name": device.name},
                    device.backend, list(fitness), islands, ledger, _brood_timeout_s(config),
                    tuple(specs), starters, owned, others)
    finally:
        _stop(owned, others)


def _island_placements() -> list:
    """Returns where islands go, taken in turn.

    An island asks Ray for no resources, so Ray's default may put it on any node, a GPU
    node included. On a cluster with GPU nodes and CPU nodes, islands go to the CPU nodes
    (pinned: Ray's soft affinity still lets some go elsewhere), leaving the GPU nodes'
    cores to the fitness workers compiling and checking candidates. Elsewhere (one
    machine, all nodes alike) Ray's default stands.
    """
    alive = [node for node in ray.nodes() if node["Alive"]]
    cpu_nodes = [node["NodeID"] for node in alive
                 if node["Resources"].get("CPU", 0) > 0 and not node["Resources"].get("GPU")]
    if not cpu_nodes or not any(node["Resources"].get("GPU") for node in alive):
        return ["DEFAULT"]
    return [NodeAffinitySchedulingStrategy(node, soft=False) for node in cpu_nodes]


def _fitness_device(actor):
    """Returns the actor's DeviceInfo; a node without a working sandbox is a ConfigError."""
    try:
        return ray.get(actor.device.remote(), timeout=ACTOR_TIMEOUT_S)
    except ray.exceptions.RayError as error:
        reason = fatal.carried(error, "SandboxUnavailable")
        if reason is None:
            raise
        raise ConfigError(f"fitness.sandbox: {reason}") from None


STOP_WAIT_S = 10.0
"""How long a campaign's end waits for the fitness actors to close their worker pools before
it kills them (a stop signal must end the campaign within 30 s)."""


def _stop(fitness: list, others: list) -> None:
    """Stops the fitness actors' worker processes, then every actor the campaign started.
    Waits for every live actor's shutdown (a dead one answers at once with an error; a hung
    one is waited for `STOP_WAIT_S`), then kills them all."""
    stopping = [actor.shutdown.remote() for actor in fitness]
    if stopping:
        ray.wait(stopping, num_returns=len(stopping), timeout=STOP_WAIT_S)
    for handle in [*fitness, *others]:
        ray.kill(handle, no_restart=True)


def _runnable(tasks: list[Task], backend: str, named: bool) -> list[Task]:
    """Returns the tasks that can run on `backend`.

    Tasks the user named must all run (an error names those that cannot). A whole suite
    may hold tasks for other hardware (a ROCm checkout on an NVIDIA box has AMD-only
    kernels): those are skipped with their reasons printed, not counted as failures.
    """
    blocked = [task for task in tasks if backend not in task.runnable_on]
    reasons = ", ".join(f"{t.name} ({t.skip_reason or 'not runnable there'})" for t in blocked)
    if blocked and (named or len(blocked) == len(tasks)):
        raise ConfigError(f"campaign.tasks: these tasks cannot run on the {backend} backend: "
                          + reasons)
    if blocked:
        print(f"skipping {len(blocked)} of {len(tasks)} tasks that cannot run on the {backend} "
              f"backend: {reasons}", flush=True)
    return [task for task in tasks if backend in task.runnable_on]


def _say_unvaried(tasks: list[Task], backend: str) -> None:
    """Prints, once, the tasks whose baseline the offline operators cannot vary: their
    islands score the baseline and breed nothing, and the campaign goes on."""
    from operators import offline

    unvaried = offline.unvaried(tasks, backend)
    if unvaried:
        print(f"offline operators cannot vary {len(unvaried)} of {len(tasks)} tasks on the {backend} "
              f"backend (their islands keep the baseline): "
              + ", ".join(f"{name} ({why})" for name, why in unvaried.items()), flush=True)


def _without_callables(task: Task) -> Task:
    """Returns the task as an island needs it: text only, so islands never import torch."""
    return dataclasses.replace(task, reference=None, make_inputs=None, flops=None, bytes=None)


def _ledger(config: Config, state: CampaignState):
    if config.operators.mode == "offline":
        return None
    ledger = LedgerActor.remote(config.budget.max_usd, config.budget.max_tokens)
    ray.get(ledger.restore.remote({"spent_usd": state.spend.usd, "spent_tokens": state.spend.tokens,
                                   "stopped_by": None}), timeout=ACTOR_TIMEOUT_S)
    return ledger


def llm_client(config: Config, budget=None):
    """Returns the LLM client of an llm or replay campaign (every island uses a copy)."""
    ops = config.operators
    from operators.llm_client import LLMClient

    try:
        client = LLMClient(model=ops.model, base_url=ops.base_url, api_key_env=ops.api_key_env,
                           mode=ops.mode, temperature=config.search.temperature,
                           max_tokens=ops.max_completion_tokens, timeout_s=ops.request_timeout_s,
                           max_retries=ops.max_retries, max_concurrency=ops.max_concurrent_requests,
                           prices=dict(ops.price_usd_per_mtok), budget=budget,
                           recording=ops.replay_from, replay_match=ops.replay_match,
                           seed=config.campaign.seed)
    except (ValueError, FileNotFoundError) as error:
        raise ConfigError(f"[operators]: {error}") from None
    return client


def recorded_generations(config: Config, tasks: list[Task]):
    """Returns the replies of `operators.generations_from` for the campaign's `tasks` (None
    when it is not set), its rows matched against every task of the suite; raises
    ConfigError naming the file's problem. Read before anything starts."""
    ops = config.operators
    if not ops.generations_from:
        return None
    from benchmarks import registry
    from operators import recorded_generations

    suite = tasks
    if config.campaign.tasks:  # a row of a task left out of the campaign must find that one
        suite = registry.load(config.campaign.suite, config.campaign.path).tasks(config.campaign.suite)
    try:
        return recorded_generations.load(ops.generations_from, ops.generations_model, suite,
                                         [task.name for task in tasks])
    except (ValueError, FileNotFoundError) as error:
        raise ConfigError(f"operators.generations_from: {error}") from None


def _knowledge(config: Config, device) -> str:
    """Returns the hardware sheet for prompts ("" offline or with the module switched off)."""
    if config.operators.mode == "offline" or not config.operators.knowledge:
        return ""
    from operators import knowledge

    return knowledge.sheet_for(device.name, device.backend)


def _brood_timeout_s(config: Config) -> float:
    ops = config.operators
    if ops.mode == "offline":
        return OFFLINE_BROOD_TIMEOUT_S
    rounds = math.ceil(config.search.offspring / ops.max_concurrent_requests)
    return rounds * (ops.max_retries + 1) * (ops.request_timeout_s + 60.0) + 60.0
