"""A campaign says what an island waits for when an evaluation has been out long
(`fitness.note_wait_s`): its task, island and generation, and the stage and request the
candidate is in on its FitnessActor, against that request's limit."""

import re

import pytest

from evo import campaign, config as config_lib
from evo.records import STAGES
from scripted_server import Reply, ScriptedServer

SLOW_ADD = '''import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, ROUNDS: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for _ in range(ROUNDS):  # the same sum again and again: honest, and slow to interpret
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        total = x + y
    tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK_SIZE=1024, ROUNDS=300)
    return out
'''

WAIT_LINE = re.compile(r"waiting: vector_add (?:seeds|island 0 gen 1), "
                       r"candidate [0-9a-f]{8} out \d+ s"
                       r"(?:: (?P<stage>\w+), (?P<request>(?:candidate|checker)\.\w+) \d+ s "
                       r"of its (?P<limit>\d+) s limit)?")


def _config(base_url: str, note_wait_s: float):
    return config_lib.from_dict({
        "campaign": {"name": "waits", "tasks": ["vector_add"]},
        "search": {"generations": 1, "population": 2, "offspring": 2, "islands": 1},
        "operators": {"mode": "llm", "base_url": base_url, "model": "m", "api_key_env": "",
                      "knowledge": False, "one_shot": False},
        "fitness": {"device": "interpreter", "workers": 1, "note_wait_s": note_wait_s}})


@pytest.mark.slow
def test_a_long_wait_is_named_with_the_stage_and_request(interpreter_fitness, tmp_path, capsys):
    with ScriptedServer(lambda request: Reply(f"Slower.\n```python\n{SLOW_ADD}\n```")) as server:
        summary = campaign.run_campaign(_config(server.base_url, 1.0), tmp_path / "run",
                                        fitness_actors=interpreter_fitness)
    assert summary.generations_done == 1

    lines = [line for line in capsys.readouterr().out.splitlines() if "waiting:" in line]
    matches = [WAIT_LINE.search(line) for line in lines]
    assert lines and all(matches), lines
    detailed = [m for m in matches if m["request"]]
    assert detailed, lines  # under way on the actor, not only queued there
    assert all(m["stage"] in STAGES and int(m["limit"]) > 0 for m in detailed), lines


@pytest.mark.slow
def test_no_wait_is_named_when_notes_are_off(interpreter_fitness, tmp_path, capsys):
    with ScriptedServer(lambda request: Reply(f"Slower.\n```python\n{SLOW_ADD}\n```")) as server:
        campaign.run_campaign(_config(server.base_url, 0), tmp_path / "run",
                              fitness_actors=interpreter_fitness)
    assert "waiting:" not in capsys.readouterr().out


def test_a_note_names_the_longest_waits_and_counts_the_rest():
    import io

    from evo.progress import WAITS_SHOWN, Progress

    stream = io.StringIO()  # not a terminal: one line each
    doing = {"stage": "run", "request": "candidate.precompile", "request_s": 70.0, "limit_s": 180.0}
    lingering = [(("row_sum", 1), 4, f"{n:016x}", 100.0 - n, doing if n else None)
                 for n in range(WAITS_SHOWN + 2)]
    with Progress(["row_sum"], generations=5, backend="cuda", stream=stream, islands=2) as progress:
        progress.waiting(lingering)

    lines = stream.getvalue().splitlines()
    assert len(lines) == WAITS_SHOWN + 1
    assert lines[0].endswith("waiting: row_sum island 1 gen 4, candidate 00000000 out 100 s "
                             "(queued on its actor, or the actor did not say)")
    assert lines[1].endswith("waiting: row_sum island 1 gen 4, candidate 00000000 out 99 s: run, "
                             "candidate.precompile 70 s of its 180 s limit")
    assert lines[-1].endswith("waiting: 2 more evaluations out longer than the note's threshold")
