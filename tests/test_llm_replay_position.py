"""Replay by position: a request whose prompt carries other measurements gets the answer
recorded at the same (task, island, generation, role, sample index).

A scripted server records the calls first (written with the engine's own Parquet schema);
the replays run with the server shut down.
"""

import asyncio

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import registry
from evo import campaign as campaign_lib
from evo import config as config_lib
from evo import results
from evo.records import Evaluation
from operators import generator, optimizer, reflector
from operators.context import OperatorContext
from operators.llm_client import LLMClient
from operators.replay import ReplayMissError
from scripted_server import ScriptedServer
from test_llm_replay import scripted_answer, variant  # different prompts get different kernels

TASK = registry.load().get("vector_add")
RECORDED_TRACE = "IndexError: index 4096 is out of bounds (measured on MI250)"
RECORDED_SPEEDUP = 1.25
PLACES = [(0, 1), (1, 1), (0, 2), (0, 3)]
"""(island, generation) of each call `steps` makes, in order; sample index = position in the list."""


async def steps(client, trace=RECORDED_TRACE, speedup=RECORDED_SPEEDUP):
    """Generator on two islands, reflector on the first child, optimizer on the fix."""
    made = []
    for slot, (island, generation) in enumerate(PLACES[:2]):
        context = OperatorContext(island=island, generation=generation)
        made.append(await generator.generate(TASK, client, context, sample_index=slot))
    first = made[0].candidate
    failing = Evaluation(first.id, "run", False, False, "runtime_error", trace)
    made.append(await reflector.reflect(TASK, first, failing, client,
                                        OperatorContext(generation=PLACES[2][1]), sample_index=2))
    fixed = made[-1].candidate
    history = [(fixed, Evaluation(fixed.id, "timed", True, True, speedup=speedup))]
    made.append(await optimizer.optimize(TASK, history, client,
                                         OperatorContext(generation=PLACES[3][1]), sample_index=3))
    await client.aclose()
    return made


def write_recording(folder, calls):
    """Writes the calls as the engine would (one part per generation of an island); returns
    their rows."""
    rows = [results.llm_call_row("recorded", TASK.name, island, generation, call)
            for (island, generation), call in zip(PLACES, calls)]
    (folder / "llm_calls").mkdir()
    for island, generation in sorted(set(PLACES)):
        part = [row for row in rows if (row["island"], row["generation"]) == (island, generation)]
        table = pa.Table.from_pylist(part, schema=results.LLM_CALL_SCHEMA)
        pq.write_table(table, results.part_path(folder / "llm_calls", generation,
                                                (TASK.name, island)))
    return rows


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Returns (campaign folder, offspring made, call rows) of the steps run against the server."""
    with ScriptedServer(scripted_answer) as server:
        made = asyncio.run(steps(live := LLMClient(model="scripted-model", base_url=server.base_url,
                                                   api_key_env="")))
    folder = tmp_path_factory.mktemp("recorded")
    return folder, made, write_recording(folder, live.drain_calls())


def replay_client(folder, match):
    return LLMClient(model="scripted-model", mode="replay", recording=folder, replay_match=match)


def test_other_measurements_are_answered_by_position(recorded):
    folder, made, rows = recorded
    client = replay_client(folder, "position")
    replayed = asyncio.run(steps(client, trace="IndexError: index 8192 is out of bounds (MI300)",
                                 speedup=0.8))
    assert [o.candidate.id for o in replayed] == [o.candidate.id for o in made]
    calls = client.drain_calls()
    assert [c["replay_matched"] for c in calls] == ["exact", "exact", "position", "position"]
    # The reflector and optimizer really asked something else than the recording holds.
    assert [c["request_hash"] == r["request_hash"] for c, r in zip(calls, rows)] == [
        True, True, False, False]
    assert "MI300" in calls[2]["messages_json"] and "MI250" not in calls[2]["messages_json"]


def test_exact_policy_names_the_hash_of_a_prompt_that_changed(recorded):
    folder, _, _ = recorded
    with pytest.raises(ReplayMissError,
                       match=r"reflector request [0-9a-f]{64} \(it was never recorded"):
        asyncio.run(steps(replay_client(folder, "exact"), trace="another trace"))


def test_a_position_with_no_recording_is_named(recorded):
    folder, made, _ = recorded
    client = replay_client(folder, "position")
    parent = made[0].candidate
    failing = Evaluation(parent.id, "run", False, False, "runtime_error", "new trace")

    def reflect(generation, sample_index):
        return asyncio.run(reflector.reflect(TASK, parent, failing, client,
                                             OperatorContext(generation=generation),
                                             sample_index=sample_index))

    with pytest.raises(ReplayMissError, match=r"reflector request [0-9a-f]{64} at task vector_add, "
                       r"island 0, generation 7, sample 2: .*nothing was recorded there"):
        reflect(7, 2)
    with pytest.raises(ReplayMissError, match="generation 1, sample 0: .*only generator calls"):
        reflect(1, 0)
    assert reflect(2, 2).candidate.id == made[2].candidate.id
    with pytest.raises(ReplayMissError, match="the reflector answer recorded there is used up"):
        reflect(2, 2)


def test_position_policy_needs_positions_and_a_known_policy(recorded):
    _, _, rows = recorded
    unplaced = [{k: v for k, v in row.items() if k != "generation"} for row in rows]
    with pytest.raises(ValueError, match="needs recorded rows with the columns task, island"):
        LLMClient(model="scripted-model", mode="replay", recording=unplaced, replay_match="position")
    with pytest.raises(ValueError, match=r"replay_match must be one of \('exact', 'position'\)"):
        LLMClient(model="scripted-model", mode="replay", recording=rows, replay_match="fuzzy")
    base = {"campaign": {"name": "c", "tasks": ["vector_add"]},
            "operators": {"mode": "replay", "replay_from": "somewhere"}}
    assert config_lib.from_dict(base).operators.replay_match == "exact"
    with pytest.raises(config_lib.ConfigError, match=r"operators\.replay_match: .*'exact' or 'position'"):
        config_lib.from_dict({**base, "operators": {**base["operators"], "replay_match": "fuzzy"}})


@pytest.mark.slow
def test_a_position_replay_campaign_reproduces_the_recorded_candidates(
        interpreter_fitness, tmp_path, monkeypatch):
    """The optimizer's prompt carries latencies measured in each run; the replay also drops
    the one-shot example, so even its generator prompt differs from the recorded one."""
    monkeypatch.setenv("SCRIPTED_KEY", "not-a-secret")
    blocks = iter([256, 512])
    answer = lambda request: (  # noqa: E731
        f"Strategy: blocks.\n```python\n{variant(next(blocks))}```")
    base = {"campaign": {"name": "recorded", "tasks": ["vector_add"], "seed_with_baseline": False},
            "search": {"generations": 2, "population": 1, "offspring": 1, "islands": 1},
            "fitness": {"device": "interpreter"}}
    with ScriptedServer(answer) as server:
        recording = config_lib.from_dict({**base, "operators": {
            "mode": "llm", "base_url": server.base_url, "model": "m", "api_key_env": "SCRIPTED_KEY"}})
        campaign_lib.run_campaign(recording, tmp_path / "recorded", fitness_actors=interpreter_fitness)
    replay = config_lib.from_dict({**base, "operators": {
        "mode": "replay", "model": "m", "one_shot": False, "replay_match": "position",
        "replay_from": str(tmp_path / "recorded")}})
    campaign_lib.run_campaign(replay, tmp_path / "replayed", fitness_actors=interpreter_fitness)

    columns = ["island", "generation", "candidate_id", "operator"]
    first = pd.read_parquet(tmp_path / "recorded" / "evaluations")[columns]
    second = pd.read_parquet(tmp_path / "replayed" / "evaluations")[columns]
    assert list(first.operator) == ["generator", "optimizer"]
    pd.testing.assert_frame_equal(first, second)
    calls = pd.read_parquet(tmp_path / "replayed" / "llm_calls")
    assert list(calls.role) == ["generator", "optimizer"]
    assert calls.replay_matched.iloc[0] == "position"
    assert set(calls.replay_matched) <= {"exact", "position"}
    assert pd.read_parquet(tmp_path / "recorded" / "llm_calls").replay_matched.isna().all()
