"""Record a small campaign's LLM calls to Parquet, then replay it with no server at all."""

import asyncio

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import registry
from evo.records import Evaluation, make_candidate
from operators import generator, optimizer, reflector
from operators.context import OperatorContext
from operators.llm_client import LLMClient
from operators.replay import Recording, ReplayMissError
from scripted_server import ScriptedServer

from kernel_variants import vector_add_at

TASK = registry.load().get("vector_add")


def variant(block_size):
    return vector_add_at(block_size)


async def campaign(client):
    """Two islands, generator then reflector then optimizer: returns every offspring made."""
    made = []
    for island in (0, 1):
        context = OperatorContext(knowledge="notes", island=island, generation=0)
        made.append(await generator.generate(TASK, client, context, sample_index=0))
    seed = made[0].candidate
    failing = Evaluation(seed.id, "run", False, False, "runtime_error", "IndexError: out of range")
    made.append(await reflector.reflect(TASK, seed, failing, client, OperatorContext(generation=1)))
    fixed = made[-1].candidate
    history = [(fixed, Evaluation(fixed.id, "timed", True, True, speedup=1.2))]
    made.append(await optimizer.optimize(TASK, history, client, OperatorContext(generation=2)))
    await client.aclose()
    return made


def scripted_answer(body):
    """Answers with a block size derived from the request, so different requests get different code."""
    block = 1 << (4 + sum(len(m["content"]) for m in body["messages"]) % 8)
    return f"Strategy: block {block}\n```python\n{variant(block)}```"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Runs the campaign against the scripted server; writes its calls as the engine would."""
    folder = tmp_path_factory.mktemp("campaign")
    with ScriptedServer(scripted_answer) as server:
        client = LLMClient(model="scripted-model", base_url=server.base_url, api_key_env="")
        made = asyncio.run(campaign(client))
    rows = [dict(row, campaign="c", task=TASK.name, island=0, generation=0) for row in client.drain_calls()]
    (folder / "llm_calls").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:2]), folder / "llm_calls" / "part-00000.parquet")
    pq.write_table(pa.Table.from_pylist(rows[2:]), folder / "llm_calls" / "part-00001.parquet")
    return folder, made, rows


def test_replay_reproduces_the_campaign_with_the_server_down(recorded):
    folder, made, _ = recorded
    client = LLMClient(model="scripted-model", mode="replay", recording=folder)
    replayed = asyncio.run(campaign(client))
    assert [o.candidate.id for o in replayed] == [o.candidate.id for o in made]
    assert [o.candidate.strategy for o in replayed] == [o.candidate.strategy for o in made]
    assert [o.candidate.llm for o in replayed] == [o.candidate.llm for o in made]
    assert len(client.drain_calls()) == len(made)


def test_replay_accepts_rows_and_identical_requests_replay_in_order(recorded):
    _, made, rows = recorded
    # Islands 0 and 1 sent identical generator requests: one hash, two recordings.
    assert rows[0]["request_hash"] == rows[1]["request_hash"]
    client = LLMClient(model="scripted-model", mode="replay", recording=rows)
    replayed = asyncio.run(campaign(client))
    assert [o.candidate.island for o in replayed[:2]] == [0, 1]
    assert [o.candidate.id for o in replayed] == [o.candidate.id for o in made]


def test_unrecorded_request_raises_naming_its_hash_and_role(recorded):
    folder, _, _ = recorded
    client = LLMClient(model="scripted-model", mode="replay", recording=Recording.load(folder / "llm_calls"))
    parent = make_candidate(TASK.name, variant(32))
    failing = Evaluation(parent.id, "compile", False, False, "compile_error", "a trace never recorded")
    with pytest.raises(ReplayMissError, match=r"reflector request [0-9a-f]{64} \(it was never recorded"):
        asyncio.run(reflector.reflect(TASK, parent, failing, client, OperatorContext()))


def test_replay_without_a_recording_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no recorded LLM calls"):
        LLMClient(model="m", mode="replay", recording=tmp_path)
    with pytest.raises(ValueError, match="lacks column"):
        Recording([{"role": "generator"}])
