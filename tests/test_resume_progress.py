"""A resumed campaign says what it resumes and its progress counts go on from the rows already
recorded, so its last progress line counts every row in the folder, as `evo report` does."""

import re

import pyarrow.parquet as pq
import pytest

import campaign_processes
from evo import campaign, config as config_lib

pytestmark = pytest.mark.slow  # two campaign runs: `make test-fast` leaves it out


def test_resume_says_what_is_resumed_and_counts_from_the_recorded_rows(
        interpreter_fitness, tmp_path, capsys):
    path = tmp_path / "resumed.toml"
    path.write_text(campaign_processes.offline_config("resumed", 5, 3))
    out = tmp_path / "run"
    campaign.run_campaign(config_lib.load(path, ["search.generations=2"]), out,
                          fitness_actors=interpreter_fitness)
    recorded = pq.read_table(out / "evaluations").num_rows
    capsys.readouterr()

    campaign.run_campaign(config_lib.load(path), out, resume=True,
                          fitness_actors=interpreter_fitness)

    said = capsys.readouterr().out
    lines = [re.sub(r"^\[\s*[\d.]+ s\] ", "", line) for line in said.splitlines()]
    assert lines[0] == (f"resuming resumed: {recorded} evaluations already recorded, from "
                        "generation 3 of 3 (checkpoint at generation 2)"), said
    progress = [line for line in lines if line.startswith("gen 3/3 vector_add")]
    assert len(progress) == 2, said  # one line per island
    counted = [int(re.search(r": (\d+) candidates on ", line).group(1)) for line in progress]
    total = pq.read_table(out / "evaluations").num_rows
    assert recorded < counted[0] < counted[1] == total, said
    assert not any(line.startswith("gen 0/") for line in lines)  # the seeds: recorded before
