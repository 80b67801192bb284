"""Generations from a file (`operators.generations_from`): the file is read and checked before
anything starts (a missing file, a malformed line, a campaign task no row matches), and the
generator role answers with its replies in file order, each call logged as a recorded one."""

import asyncio
import dataclasses
import gzip
import json
import pathlib

import pytest

from evo import campaign, config as config_lib, wiring
from evo.population import Population
from operators import parsing, recorded_generations
from operators.recorded_generations import FileGenerator
from operators.replay import Position

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
GENERATIONS = FIXTURES / "recorded_generations" / "tritonbench_g.jsonl"
FIXTURE_SUITE = FIXTURES / "external" / "tritonbench"
MESSAGES = [{"role": "user", "content": "Write the kernel."}]


def _config(tasks=("scale_shift", "row_max"), generations_from=str(GENERATIONS), **operators):
    return config_lib.from_dict({
        "campaign": {"name": "from-file", "tasks": list(tasks), "suite": "tritonbench-revised",
                     "path": str(FIXTURE_SUITE)},
        "search": {"generations": 1, "population": 2, "offspring": 1},
        "operators": {"mode": "offline", "generations_from": generations_from, **operators},
        "fitness": {"device": "interpreter"}})


def _generations(config):
    return wiring.recorded_generations(config, config_lib.resolve_tasks(config))


def _replies():
    return [json.loads(line)["predict"] for line in GENERATIONS.read_text().splitlines()]


def test_a_file_serves_its_campaign_tasks_and_says_what_it_left_out():
    generations = _generations(_config())
    assert {task: [s.line for s in samples] for task, samples in generations.samples.items()} == {
        "scale_shift": [1, 3], "row_max": [2, 4]}
    assert generations.model == "tritonbench_g"  # the file's name
    assert "6 rows (1 exact, 1 contained, 2 instruction, 1 ambiguous, 1 unmatched" in generations.report
    assert "line(s) 5, 6 left out" in generations.report


def test_a_gzip_file_reads_as_the_plain_one_and_names_its_model(tmp_path):
    packed = tmp_path / "qwen-coder.jsonl.gz"
    packed.write_bytes(gzip.compress(GENERATIONS.read_bytes()))
    plain = _generations(_config())
    generations = _generations(_config(generations_from=str(packed)))
    assert generations.samples == plain.samples and generations.model == "qwen-coder"
    assert _generations(_config(generations_from=str(packed), generations_model="m")).model == "m"


def test_a_missing_file_a_malformed_line_and_a_row_without_label_are_named(tmp_path):
    with pytest.raises(config_lib.ConfigError, match=r"operators.generations_from: no generations "
                                                       r"file at .*absent.jsonl"):
        _generations(_config(generations_from=str(tmp_path / "absent.jsonl")))
    broken = tmp_path / "broken.jsonl"
    lines = GENERATIONS.read_text().splitlines()
    broken.write_text("\n".join(lines[:2] + ["", '{"predict": "x", "label": '] + lines[2:]) + "\n")
    with pytest.raises(config_lib.ConfigError, match=r"broken.jsonl:4: not a JSON object"):
        _generations(_config(generations_from=str(broken)))
    broken.write_text(lines[0] + "\n" + json.dumps({"instruction": "x", "predict": "y"}) + "\n")
    with pytest.raises(config_lib.ConfigError, match=r"broken.jsonl:2: needs string fields .*"
                                                       r"label missing"):
        _generations(_config(generations_from=str(broken)))


def test_a_campaign_task_no_row_matches_stops_the_campaign_before_it_starts(tmp_path):
    config = _config(tasks=("scale_shift", "fnuz_cast"))
    with pytest.raises(config_lib.ConfigError, match=r"no row matches campaign task\(s\) fnuz_cast"):
        campaign.run_campaign(config, tmp_path / "run")
    assert not (tmp_path / "run" / "campaign.json").exists()


def test_config_keys_combine_with_the_modes():
    offline = config_lib.from_dict({"campaign": {"name": "x", "seed_with_baseline": False},
                                    "operators": {"generations_from": "g.jsonl"}})
    assert offline.operators.generations_from == "g.jsonl"  # the file gives the first kernels
    with pytest.raises(config_lib.ConfigError, match="seed_with_baseline must be true"):
        config_lib.from_dict({"campaign": {"name": "x", "seed_with_baseline": False}})
    with pytest.raises(config_lib.ConfigError, match="generations_model names the model of "
                                                       "operators.generations_from, which is not set"):
        config_lib.from_dict({"campaign": {"name": "x"}, "operators": {"generations_model": "m"}})


def test_each_island_takes_the_samples_in_file_order_from_its_own_and_starts_over():
    client = FileGenerator(_generations(_config()))

    def answer(island):
        reply = asyncio.run(client.complete("generator", MESSAGES, 0,
                                            position=Position("scale_shift", island, 0)))
        return reply.recorded_from.rsplit(":", 1)[1]

    assert [answer(0), answer(0), answer(0), answer(1)] == ["1", "3", "1", "3"]
    rows = client.drain_calls()
    assert [row["recorded_from"] for row in rows[:2]] == [f"{GENERATIONS}:1", f"{GENERATIONS}:3"]
    first = rows[0]
    assert (first["role"], first["model"], first["response"], first["success"]) == (
        "generator", "tritonbench_g", _replies()[0], True)
    assert (first["latency_s"], first["cost_usd"], first["prompt_tokens"],
            first["completion_tokens"]) == (0.0, 0.0, None, None)
    assert len(first["request_hash"]) == 64
    with pytest.raises(ValueError, match="answers only the generator role.*reflector"):
        asyncio.run(client.complete("reflector", MESSAGES, 0, position=Position("scale_shift", 0, 1)))


def test_generation_zero_holds_the_baseline_and_the_recorded_generation():
    config = _config()
    tasks = {task.name: task for task in config_lib.resolve_tasks(config)}
    client = FileGenerator(_generations(config))
    task = dataclasses.replace(tasks["scale_shift"], reference=None, make_inputs=None)
    baseline, recorded = asyncio.run(Population(task, 0, config, "interpreter", client).seeds())
    assert (baseline.operator, baseline.source) == ("seed", task.baseline_source)
    assert recorded.operator == "generator" and recorded.generation == 0 and not recorded.parents
    assert recorded.source == parsing.extract(_replies()[0], task.entry_point).source
    assert recorded.llm.model == "tritonbench_g"
    assert [row["recorded_from"] for row in client.drain_calls()] == [f"{GENERATIONS}:1"]
    # Island 1 starts at the second sample: for row_max, a reply with no code at all.
    island = Population(tasks["row_max"], 1, config, "interpreter", client)
    assert [seed.operator for seed in asyncio.run(island.seeds())] == ["seed"]
    (row,) = island.drain_calls()
    assert (row["recorded_from"], row["failure_kind"]) == (f"{GENERATIONS}:4", "no_code_block")
