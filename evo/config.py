"""Campaign configuration: one frozen model per TOML section, validated on load.

A config file has five sections, `[campaign]`, `[search]`, `[operators]`, `[fitness]` and
`[budget]`; every key has a default except `campaign.name`. An unknown key or a bad value
raises `ConfigError` naming `section.key` and what is allowed, and `--set section.key=value`
overrides go through the same validation as the file. docs/config.md lists every key.
"""

from __future__ import annotations

import difflib
import tomllib
import typing
from pathlib import Path
from typing import Any, Iterable, Literal, Optional

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from fitness import Settings


class ConfigError(ValueError):
    """A config is malformed; the message names the key and what is allowed."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Campaign(_Section):
    """[campaign]: what to search and how to seed it.

    Attributes:
      name: label of the campaign; default results folder is results/<name>-<time>.
      tasks: task names; empty means every task of `suite`.
      suite: "builtin", or an external suite: "tritonbench-revised", "rocm", "kernelbench".
      path: the local checkout of an external suite (required with one).
      seed: seeds every island's RNG, so the same config and seed give the same run.
      seed_with_baseline: start each island from the task's baseline kernel (required
        offline, where operators only rewrite existing kernels, unless
        operators.generations_from gives them); GEAK starts from the instruction alone
        (false, LLM mode).
    """

    name: str = Field(min_length=1)
    tasks: tuple[str, ...] = ()
    suite: str = "builtin"
    path: Optional[str] = None
    seed: int = 0
    seed_with_baseline: bool = True


class Search(_Section):
    """[search]: the scaling knobs.

    Attributes:
      generations: sequential scaling; offspring generations after the seed population.
      population: individuals kept per island (elitist).
      offspring: individuals made per island per generation.
      islands: parallel scaling; independent populations per task.
      migration_interval: migrate the best along a ring every this many generations;
        0 keeps islands independent (GEAK's parallel runs).
      migrants: individuals each island sends per migration.
      max_debug_attempts: a lineage failing this many times in a row is abandoned and a
        fresh generator call replaces it (GEAK's debugging trap).
      temperature: LLM sampling temperature (GEAK samples at 1.0).
      crossover_rate: chance that an offspring slot mates two correct parents.
      tournament_size: parents are the best of this many drawn at random.
    """

    generations: int = Field(default=5, ge=0)
    population: int = Field(default=4, ge=1)
    offspring: int = Field(default=4, ge=1)
    islands: int = Field(default=1, ge=1)
    migration_interval: int = Field(default=0, ge=0)
    migrants: int = Field(default=1, ge=1)
    max_debug_attempts: int = Field(default=5, ge=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    crossover_rate: float = Field(default=0.3, ge=0.0, le=1.0)
    tournament_size: int = Field(default=2, ge=1)


class Operators(_Section):
    """[operators]: how offspring are made: by LLM roles through an endpoint, offline
    operators or a recorded campaign, and how LLM calls are priced, retried and bounded.

    Each key's meaning is the string below it.
    """

    mode: Literal["llm", "offline", "replay"] = "offline"
    """"llm" (an OpenAI-compatible endpoint), "offline" (launch-config and constexpr
    mutation/crossover, no LLM) or "replay" (answers from a recorded campaign)."""
    base_url: str = ""
    """The endpoint (llm mode)."""
    model: str = ""
    """The model name (llm mode)."""
    api_key_env: str = "OPENAI_API_KEY"
    """The name of the variable holding the API key (the key is never stored)."""
    replay_from: Optional[str] = None
    """Results folder of the recorded campaign (replay mode)."""
    replay_match: Literal["exact", "position"] = "exact"
    """"exact" answers a request only by its hash (model, messages, sampling, sample index);
    "position" answers one whose hash was not recorded by its place in the recorded
    campaign, (task, island, generation, role, sample index), so a replay on other hardware,
    whose reflector and optimizer prompts carry other measurements, gets the same answers
    in the same places (a place with no recording still stops it)."""
    generations_from: Optional[str] = None
    """A JSONL file (.gz or plain) of recorded model output, rows {instruction, predict,
    label} as TritonBench's `LLM_generated/` publishes them: the generator role answers from
    it instead of an endpoint, in any mode (offline: the offline operators evolve what it
    gave; llm or replay: the other roles ask as configured). Each island's generation 0 holds
    the generator's answer for its task (beside the baseline with `seed_with_baseline`); a
    row belongs to the task whose gold code its label is, and a campaign task that no row
    matches stops the campaign before it starts (`operators.recorded_generations`)."""
    generations_model: str = ""
    """The model name the recorded replies' rows carry ("": the file's name without
    .jsonl/.gz, "gpt-4o.jsonl.gz" -> "gpt-4o")."""
    knowledge: bool = True
    """Inject the device's hardware sheet into the prompts (LLM modes; ablation switches
    here and below, as GEAK Table 9)."""
    one_shot: bool = True
    """Add one example kernel, retrieved by code similarity, to the generator's prompt
    (LLM modes)."""
    optimizer: bool = True
    """The optimizer role improves correct parents; off, the generator takes its place
    (LLM modes)."""
    reflector: bool = True
    """The reflector role repairs failing parents from their error; off, the generator takes
    its place (LLM modes)."""
    crossover: bool = True
    """The crossover role combines two correct parents; off, no offspring slot mates
    (LLM modes)."""
    price_usd_per_mtok: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """Model -> [input, output] USD per million tokens, for spend and `budget.max_usd`
    (`{ "my-model" = [0.5, 1.5] }`); empty: the list prices of a few OpenAI models
    (`operators/prices.py`). With `budget.max_usd` above 0, a model without a price is
    refused at load: its calls would count as $0 and the cap could not stop them."""
    max_completion_tokens: int = Field(default=4096, ge=1)
    """Cap on tokens per answer."""
    request_timeout_s: float = Field(default=300.0, gt=0)
    """Limit per request, in the HTTP client."""
    max_retries: int = Field(default=5, ge=0)
    """Further attempts of a call after a 429, a 5xx, a timeout or a connection error
    (exponential backoff from 1 s, capped at 60 s)."""
    max_concurrent_requests: int = Field(default=8, ge=1)
    """LLM calls in flight, per island."""
    max_consecutive_failures: int = Field(default=20, ge=1)
    """The campaign stops (cleanly: checkpoint written, rows kept, exit status 3) after this
    many LLM calls in a row, across islands, gave no usable answer (`evo.breaker`)."""


class Fitness(Settings):
    """[fitness]: where and how candidates are scored: `fitness.Settings` (device, workers,
    spares, sandbox, static_gate, time_every_case, timeouts, sandbox_limits, with their meanings),
    which travels whole to each FitnessActor, and the engine's own knobs below.

    Attributes:
      max_in_flight_per_actor: evaluations submitted to one FitnessActor at once.
      answer_timeout_s: how long the engine waits for one evaluation before declaring
        the fitness actor unresponsive (the actor's own stage limits are much shorter).
      note_wait_s: an evaluation out longer than this is named in the progress, with the
        stage and request it is in (a compile near its limit, a wait for the device), at
        most once per this many seconds; 0: never.
    """

    max_in_flight_per_actor: int = Field(default=8, ge=1)
    answer_timeout_s: float = Field(default=900.0, gt=0)
    note_wait_s: float = Field(default=60.0, ge=0)


class Budget(_Section):
    """[budget]: caps; the campaign stops cleanly at the first one reached (unset = none).

    Attributes:
      max_usd: LLM spend, counting the estimated cost of calls in flight.
      max_tokens: LLM tokens (prompt + completion), counted the same way.
      max_gpu_seconds: fitness time, the sum of compile_s + check_s + bench_s.
      max_wall_seconds: wall time of the campaign, summed over resumed runs.
    """

    max_usd: Optional[float] = Field(default=None, ge=0)
    max_tokens: Optional[int] = Field(default=None, ge=0)
    max_gpu_seconds: Optional[float] = Field(default=None, ge=0)
    max_wall_seconds: Optional[float] = Field(default=None, ge=0)


class Config(_Section):
    """A whole campaign config."""

    campaign: Campaign
    search: Search = Field(default_factory=Search)
    operators: Operators = Field(default_factory=Operators)
    fitness: Fitness = Field(default_factory=Fitness)
    budget: Budget = Field(default_factory=Budget)


SECTIONS = {"campaign": Campaign, "search": Search, "operators": Operators,
            "fitness": Fitness, "budget": Budget}


def load(path: str | Path, overrides: Iterable[str] = ()) -> Config:
    """Returns the validated config in the TOML file `path`, with `--set` overrides applied."""
    raw = read_toml(Path(path), "config file")
    for override in overrides:
        raw = apply_override(raw, override)
    try:
        return from_dict(raw)
    except ConfigError as error:
        if not overrides:
            raise
        raise ConfigError(f"{error}\n(--set takes section.key=value: a TOML value, a bare word, "
                          f"or a list as a,b)") from None


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """Returns the parsed TOML file; raises ConfigError naming `what` if it is missing or bad."""
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def with_key(raw: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Returns a copy of the parsed TOML `raw` with `key` ("section.key") set to `value`."""
    section, _, name = key.partition(".")
    merged = {table: dict(body) for table, body in raw.items()}
    merged.setdefault(section, {})[name] = value
    return merged


def apply_override(raw: dict[str, Any], override: str) -> dict[str, Any]:
    """Returns a copy of `raw` with `section.key=value` set.

    The value is read as a TOML literal (`5`, `true`, `"x"`, `[1, 2]`), falling back to
    the plain string, so `--set campaign.name=demo` works without quotes; for a list key a
    bare `a,b` (or `[a, b]`) is the list of its items.
    """
    target, sep, text = override.partition("=")
    section, dot, key = target.strip().partition(".")
    if not sep or not dot or not section or not key:
        raise ConfigError(f"override {override!r} is not of the form section.key=value")
    if section not in SECTIONS:
        raise ConfigError(f"override {override!r}: unknown section {section!r}"
                          f"{did_you_mean(section, SECTIONS)}; allowed: {', '.join(SECTIONS)}")
    try:
        value = tomllib.loads(f"value = {text.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    if isinstance(value, str) and _is_sequence(SECTIONS[section], key.strip()):
        value = [item.strip() for item in value.strip("[]").split(",") if item.strip()]
    return with_key(raw, f"{section}.{key.strip()}", value)


def _is_sequence(section: type[BaseModel], key: str) -> bool:
    """Whether `section.key` holds a list, so a bare `a,b` override means ["a", "b"]."""
    field = section.model_fields.get(key)
    return field is not None and typing.get_origin(field.annotation) in (tuple, list)


def from_dict(raw: dict[str, Any]) -> Config:
    """Returns the validated config for a parsed TOML document; raises ConfigError."""
    for section, body in raw.items():
        if section not in SECTIONS:
            raise ConfigError(f"unknown section [{section}]{did_you_mean(section, SECTIONS)}; "
                              f"allowed: {', '.join(f'[{s}]' for s in SECTIONS)}")
        if not isinstance(body, dict):
            raise ConfigError(f"[{section}] must be a table of keys, got {body!r}")
    if "campaign" not in raw:
        raise ConfigError("missing section [campaign] (needs at least campaign.name)")
    try:
        config = Config.model_validate(raw)
    except pydantic.ValidationError as error:
        raise ConfigError(_describe(error)) from None
    _check_consistency(config)
    return config


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Returns " (did you mean 'x'?)" for the choice closest to a misspelt `word` (difflib),
    or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(error: pydantic.ValidationError) -> str:
    """Returns one line per problem, each naming `section.key` and what is allowed."""
    lines = []
    for problem in error.errors():
        location = [str(part) for part in problem["loc"]]
        key = ".".join(location)
        section = SECTIONS.get(location[0]) if location else None
        if problem["type"] == "extra_forbidden" and section is not None and len(location) == 2:
            allowed = ", ".join(section.model_fields)
            lines.append(f"{key}: unknown key{did_you_mean(location[1], section.model_fields)}; "
                         f"allowed keys in [{location[0]}]: {allowed}")
        elif problem["type"] == "missing":
            lines.append(f"{key}: required key is missing")
        else:
            lines.append(f"{key}: {problem['msg']} (got {problem.get('input')!r})")
    return "invalid config:\n  " + "\n  ".join(lines)


def _check_priced(config: Config) -> None:
    """Raises ConfigError when `budget.max_usd` could not stop the run: the model's calls
    have no price, so they would count as $0 (`max_usd = 0` says the model is free)."""
    from operators import prices  # the client's own table and rule

    ops, max_usd = config.operators, config.budget.max_usd
    if ops.mode != "llm" or not max_usd or ops.model in prices.table(ops.price_usd_per_mtok):
        return
    raise ConfigError(
        f"budget.max_usd = {max_usd:g} cannot stop this run: model {ops.model!r} has no price "
        f"in operators.price_usd_per_mtok, so its calls count as $0; set its price, e.g. "
        f"operators.price_usd_per_mtok = {{ \"{ops.model}\" = [0.5, 1.5] }} (USD per million "
        f"input, output tokens), or budget.max_usd = 0 for a model that costs nothing")


def _check_consistency(config: Config) -> None:
    """Raises ConfigError for combinations no single key's validation can catch."""
    ops = config.operators
    _check_priced(config)
    if ops.mode == "offline" and not (config.campaign.seed_with_baseline or ops.generations_from):
        raise ConfigError("campaign.seed_with_baseline must be true when operators.mode = "
                          "\"offline\" (offline operators only rewrite existing kernels) unless "
                          "operators.generations_from gives the first ones")
    if ops.generations_model and not ops.generations_from:
        raise ConfigError("operators.generations_model names the model of "
                          "operators.generations_from, which is not set")
    if ops.mode == "llm" and (not ops.base_url or not ops.model):
        raise ConfigError("operators.mode = \"llm\" needs operators.base_url and "
                          "operators.model")
    if ops.mode == "replay" and not ops.replay_from:
        raise ConfigError("operators.mode = \"replay\" needs operators.replay_from "
                          "(the results folder of the recorded campaign)")
    if config.campaign.suite != "builtin" and not config.campaign.path:
        raise ConfigError(f"campaign.suite = {config.campaign.suite!r} needs campaign.path "
                          "(a local checkout of the suite)")


def resolve_tasks(config: Config) -> list:
    """Returns the Task records the campaign searches; raises ConfigError for unknown names.

    Imports the benchmarks room (and so torch) only here, so validating a config stays cheap.
    """
    from benchmarks import registry

    try:
        tasks = registry.load(config.campaign.suite, config.campaign.path)
    except (ValueError, FileNotFoundError) as error:
        raise ConfigError(f"campaign.suite: {error}") from None
    if not config.campaign.tasks:
        found = tasks.tasks(config.campaign.suite)
        if not found:
            raise ConfigError(f"campaign.suite {config.campaign.suite!r} has no tasks")
        return found
    repeated = sorted({name for name in config.campaign.tasks
                       if config.campaign.tasks.count(name) > 1})
    if repeated:
        raise ConfigError(f"campaign.tasks names {repeated} more than once")
    try:
        return [tasks.get(name) for name in config.campaign.tasks]
    except registry.UnknownTaskError as error:
        raise ConfigError(f"campaign.tasks: {error}") from None
