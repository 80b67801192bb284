"""No global barrier: a slow task holds up only its own islands (issue 12, item 3).

Two tasks against the scripted loopback server: vector_add's calls are answered at once,
row_sum's after SLOW_S. With a barrier every generation waits for the slowest island, so
vector_add could not finish generation 2 before row_sum finished generation 1.
"""

import re

import pandas as pd
import pytest

from benchmarks.builtin import common
from evo import campaign, checkpoint, config as config_lib
from scripted_server import Reply, ScriptedServer, Stall

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

SLOW_S = 12.0
"""How long each of row_sum's LLM calls takes."""
VECTOR_ADD = common.baseline_source("vector_add")
SMALL = '"small": (("BLOCK_SIZE", 1024)'


def _answer(request):
    """vector_add: at once, a block-size variant of its baseline; row_sum: its baseline, late."""
    prompt = "\n".join(str(message.get("content", "")) for message in request["messages"])
    if "row_sum" in prompt:  # one-shot examples are off: no prompt names the other task
        # A Stall sleeps outside the server's lock: other requests are answered meanwhile.
        return Stall(SLOW_S, _reply(common.baseline_source("row_sum")))
    block = 256 * 2 ** (len(prompt) % 3)
    return _reply(VECTOR_ADD.replace(SMALL, SMALL.replace("1024", str(block))))


def _reply(source):
    return Reply(f"Strategy: retune.\n```python\n{source}\n```")


def test_a_slow_task_does_not_hold_up_a_fast_one(interpreter_fitness, tmp_path, capsys):
    with ScriptedServer(_answer) as server:
        config = config_lib.from_dict({
            "campaign": {"name": "pace", "tasks": ["vector_add", "row_sum"]},
            "search": {"generations": 2, "population": 2, "offspring": 2, "islands": 1},
            "operators": {"mode": "llm", "base_url": server.base_url, "model": "m",
                          "api_key_env": "", "knowledge": False, "one_shot": False},
            "fitness": {"device": "interpreter", "workers": 1}})
        summary = campaign.run_campaign(config, tmp_path / "run",
                                        fitness_actors=interpreter_fitness)

    assert summary.generations_done == 2 and summary.stopped_by is None
    lines = capsys.readouterr().out.splitlines()
    order = [match.groups() for line in lines
             if (match := re.search(r"gen (\d)/2 (vector_add|row_sum):", line))]
    assert order.index(("2", "vector_add")) < order.index(("1", "row_sum")), lines
    # Each island wrote its own part per generation; together they are the campaign's rows.
    parts = sorted(p.name for p in (tmp_path / "run" / "evaluations").iterdir())
    assert parts == ["part-00000-row_sum-i000.parquet", "part-00000-vector_add-i000.parquet",
                     "part-00001-row_sum-i000.parquet", "part-00001-vector_add-i000.parquet",
                     "part-00002-row_sum-i000.parquet", "part-00002-vector_add-i000.parquet"]
    rows = pd.read_parquet(tmp_path / "run" / "evaluations")
    assert rows.groupby(["task", "generation"]).size().to_dict() == {
        ("row_sum", 0): 1, ("row_sum", 1): 2, ("row_sum", 2): 2,
        ("vector_add", 0): 1, ("vector_add", 1): 2, ("vector_add", 2): 2}
    state = checkpoint.load(tmp_path / "run")
    assert {key: island.generation_done for key, island in state.islands.items()} == {
        ("row_sum", 0): 2, ("vector_add", 0): 2}
