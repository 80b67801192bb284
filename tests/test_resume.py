"""Exact resume: a campaign killed at any moment continues to the rows of an uninterrupted run."""

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

import campaign_processes
from evo import campaign, checkpoint, config as config_lib, fitness_meter, provenance

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

CONFIG_TOML = campaign_processes.offline_config("resume", 11, 3)

MEASURED = ["latency_us", "ref_latency_us", "latency_p20_us", "latency_p80_us", "speedup",
            "worst_speedup", "roofline_fraction", "compile_s", "check_s", "bench_s", "max_abs_err",
            "rel_err", "llm_latency_s"]
"""Columns that measure time or fresh random inputs: they differ between any two runs."""


def _rows(folder):
    frame = pd.read_parquet(folder / "evaluations").drop(columns=MEASURED)
    frame = frame.sort_values(["generation", "task", "island"], kind="stable")
    return frame.reset_index(drop=True).map(lambda v: list(v) if hasattr(v, "tolist") else v)


def _config_file(tmp_path):
    path = tmp_path / "resume.toml"
    path.write_text(CONFIG_TOML)
    return path


def _files(folder):
    return {path: path.read_bytes() for path in folder.rglob("*.pkl")}


def _assert_same_rows(resumed, reference):
    assert len(resumed) == len(reference)
    pd.testing.assert_frame_equal(resumed, reference)


@pytest.fixture(scope="module")
def reference(interpreter_fitness, tmp_path_factory):
    """The uninterrupted run every resumed run must match."""
    folder = tmp_path_factory.mktemp("reference") / "run"
    path = _config_file(folder.parent)
    summary = campaign.run_campaign(config_lib.load(path), folder,
                                    fitness_actors=interpreter_fitness)
    assert summary.generations_done == 3
    return folder


def test_kill_9_mid_run_then_resume_gives_the_uninterrupted_rows(reference, interpreter_fitness,
                                                                  tmp_path):
    config_path, out = _config_file(tmp_path), tmp_path / "killed"
    command = [sys.executable, "-c", "from evo.cli import app; app()", "run", str(config_path),
               "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list((out / "evaluations").glob("part-00002-*.parquet")):
            assert process.poll() is None, process.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the campaign never reached generation 2"
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)  # mid-run: right after a part lands
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.stdout.close()
    assert process.returncode == -signal.SIGKILL
    written_before = sorted(p.name for p in (out / "evaluations").iterdir())

    summary = campaign.run_campaign(config_lib.load(config_path), out, resume=True,
                                    fitness_actors=interpreter_fitness)

    assert summary.generations_done == 3 and summary.stopped_by is None
    assert set(written_before) <= {p.name for p in (out / "evaluations").iterdir()}
    _assert_same_rows(_rows(out), _rows(reference))
    assert (_rows(out).generation == 0).sum() == 2  # one seed row per island, not duplicated


def test_seeds_written_but_not_checkpointed_are_kept_not_scored_again(
        reference, interpreter_fitness, tmp_path):
    config_path, out = _config_file(tmp_path), tmp_path / "seeded"
    campaign.run_campaign(config_lib.load(config_path, ["search.generations=0"]), out,
                          fitness_actors=interpreter_fitness)
    parts_0 = sorted((out / "evaluations").glob("part-*.parquet"))
    assert [part.name for part in parts_0] == ["part-00000-vector_add-i000.parquet",
                                               "part-00000-vector_add-i001.parquet"]
    written = {part: (part.read_bytes(), part.stat().st_mtime_ns) for part in parts_0}
    for saved in (out / "checkpoint").rglob("*.pkl"):  # a kill before the seeds' checkpoint
        saved.unlink()

    summary = campaign.run_campaign(config_lib.load(config_path), out, resume=True,
                                    fitness_actors=interpreter_fitness)

    assert summary.generations_done == 3
    assert {part: (part.read_bytes(), part.stat().st_mtime_ns) for part in parts_0} == written
    _assert_same_rows(_rows(out), _rows(reference))
    assert summary.candidates == len(_rows(out))  # the redone seeds counted once
    # a line per run of where the fitness actors' time went, the second run's counters the
    # shared actors' since they started (they only grow)
    runs = fitness_meter.read(out)
    assert len(runs) == 2 and all(len(run["actors"]) == len(interpreter_fitness) for run in runs)
    first, second = (sum(actor["evaluated"] for actor in run["actors"]) for run in runs)
    rows = _rows(out)
    scored_again = ((rows.generation > 0) & ~rows.reused.astype(bool)).sum()  # the seeds kept
    assert first > 0 and second - first >= scored_again > 0
    assert all(actor["request_s"]["candidate.lease"] >= 0 for actor in runs[1]["actors"])
    assert runs[0]["started_at"] < runs[0]["ended_at"] <= runs[1]["started_at"]


def test_generation_written_but_not_checkpointed_is_redone_to_the_same_part(
        reference, interpreter_fitness, tmp_path):
    config_path, out = _config_file(tmp_path), tmp_path / "torn"
    run = lambda config, **resume: campaign.run_campaign(  # noqa: E731
        config, out, fitness_actors=interpreter_fitness, **resume)
    run(config_lib.load(config_path, ["search.generations=2"]))
    checkpoint_after_2 = _files(out / "checkpoint")
    run(config_lib.load(config_path), resume=True)
    parts_3 = sorted((out / "evaluations").glob("part-00003-*.parquet"))
    assert len(parts_3) == 2  # one per island
    written = {part: (part.read_bytes(), part.stat().st_mtime_ns) for part in parts_3}
    after_3 = checkpoint.load(out)
    # A kill after the parts of 3 were written but before their checkpoint: it says 2.
    for path, data in checkpoint_after_2.items():
        path.write_bytes(data)
    after_2 = checkpoint.load(out)

    summary = run(config_lib.load(config_path), resume=True)

    assert summary.generations_done == 3
    kept = {part: (part.read_bytes(), part.stat().st_mtime_ns) for part in parts_3}
    assert kept == written  # kept, not rewritten
    _assert_same_rows(_rows(out), _rows(reference))

    # Islands advance at their own pace: a kill may find island 0 done with 3 and island 1
    # still on it. Only island 1 redoes it, to the same part.
    behind = ("vector_add", 1)
    checkpoint.save(out, dataclasses.replace(
        after_3, islands={**after_3.islands, behind: after_2.islands[behind]}), {"vector_add"})
    assert (checkpoint.load(out).generation_done, checkpoint.load(out).furthest_generation) == (2, 3)

    summary = run(config_lib.load(config_path), resume=True)

    assert summary.generations_done == summary.furthest_generation == 3
    kept = {part: (part.read_bytes(), part.stat().st_mtime_ns) for part in parts_3}
    assert kept == written
    _assert_same_rows(_rows(out), _rows(reference))


def test_resume_refuses_a_config_that_changes_the_search(reference, interpreter_fitness, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(reference, out)
    changed = config_lib.load(_config_file(tmp_path), ["search.population=5"])
    with pytest.raises(config_lib.ConfigError, match=r"search\.population: 3 -> 5"):
        campaign.run_campaign(changed, out, resume=True, fitness_actors=interpreter_fitness)
    # how many workers score changes how fast, not what: a Table 2 campaign resumed on 12
    # workers after 8 was refused (RESULTS.md §45)
    provenance.check_resumable(out, config_lib.load(_config_file(tmp_path),
                                                    ["fitness.workers=3", "fitness.spares=2"]))
    with pytest.raises(config_lib.ConfigError, match="already holds a campaign"):
        campaign.run_campaign(config_lib.load(_config_file(tmp_path)), out,
                              fitness_actors=interpreter_fitness)
