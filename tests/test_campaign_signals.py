"""SIGTERM and SIGINT stop a real `evo run` cleanly: within 30 s, with one line naming the
signal and the command that continues, no Ray or sandbox process left 10 s after it, and a
resume that records exactly a clean run's rows. A second SIGINT exits at once, killing the
local Ray's processes; on an attached cluster the campaign's actors go and the cluster stays."""

import contextlib
import json
import os
import signal
import time

import pytest

import campaign_processes as runs
from evo import campaign, config as config_lib

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

STOP_LIMIT_S = 30.0
LEFTOVER_LIMIT_S = 10.0


@pytest.fixture(scope="module")
def reference(interpreter_fitness, tmp_path_factory):
    """The rows of a clean run with the same seed."""
    folder = tmp_path_factory.mktemp("reference")
    out = folder / "run"
    summary = campaign.run_campaign(config_lib.load(runs.config_file(folder)), out,
                                    fitness_actors=interpreter_fitness)
    assert summary.generations_done == runs.GENERATIONS
    return runs.rows(out)


@contextlib.contextmanager
def _campaign_at(tmp_path, generation):
    """Yields (the process, the processes it started, its config path, its out folder) once a
    campaign started in `tmp_path` reaches `generation`; whatever is left is killed after."""
    config_path, out = runs.config_file(tmp_path), tmp_path / "run"
    process = runs.start(config_path, out)
    started = []
    try:
        runs.wait_for_generation(process, out, generation)
        started = runs.descendants(process.pid)
        yield process, started, config_path, out
    finally:
        runs.kill_leftovers(process, started)


def _exit_and_leftovers(process, started, signalled, exit_limit_s):
    """Waits for the signalled process; returns the seconds from `signalled` to its exit, the
    seconds from then until everything it started is gone, and what is left."""
    process.wait(timeout=exit_limit_s)
    exit_s = time.monotonic() - signalled
    gone_s = runs.seconds_until_gone(started, LEFTOVER_LIMIT_S + 20)
    return exit_s, gone_s, [(p.pid, p.name()) for p in runs.alive(started)]


def _stop_mid_run(tmp_path, signum):
    """Starts a campaign, signals it after generation 2's first part; returns its exit
    status, the seconds to its exit, the seconds from then until everything it started is
    gone, what is left, what it printed, and its paths."""
    with _campaign_at(tmp_path, 2) as (process, started, config_path, out):
        names = " ".join(p.name() for p in started)
        assert "raylet" in names and "ray::FitnessService" in names and "bwrap" in names, names
        signalled = time.monotonic()
        process.send_signal(signum)
        exit_s, gone_s, left = _exit_and_leftovers(process, started, signalled, STOP_LIMIT_S + 30)
    print(f"{signum.name}: exit {exit_s:.1f} s after the signal, its processes gone "
          f"{exit_s + gone_s:.1f} s after it")
    return process.returncode, exit_s, gone_s, left, runs.terminal(process), config_path, out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_ends_the_run_cleanly_and_resume_matches_a_clean_run(
        signum, reference, interpreter_fitness, tmp_path):
    status, exit_s, gone_s, left, said, config_path, out = _stop_mid_run(tmp_path, signum)

    assert status == 128 + signum, said[-3000:]
    assert exit_s < STOP_LIMIT_S
    assert not left and gone_s < LEFTOVER_LIMIT_S, left
    assert "Traceback" not in said, said[-3000:]
    command = f"evo run {config_path} --out {out} --resume"
    last = said.strip().splitlines()[-1]
    assert f"campaign stopped by {signum.name}" in last and command in last, said[-2000:]
    assert "kept: checkpoint at generation" in last
    written = runs.rows(out)
    assert set(written) <= set(reference)  # nothing half-scored was recorded
    stop = json.loads((out / "campaign.json").read_text())["stop"]  # what `evo report` shows
    assert (stop["stopped_by"], stop["reason"]) == (signum.name, f"stopped by {signum.name}")

    summary = campaign.run_campaign(config_lib.load(config_path), out, resume=True,
                                    fitness_actors=interpreter_fitness)
    assert summary.generations_done == runs.GENERATIONS
    assert runs.rows(out) == reference  # 0 lost, 0 extra
    stop = json.loads((out / "campaign.json").read_text())["stop"]  # the resumed run's end
    assert stop["stopped_by"] is None
    assert stop["reason"] == f"completed after generation {runs.GENERATIONS}"


def test_a_second_sigint_exits_at_once(tmp_path):
    with _campaign_at(tmp_path, 1) as (process, started, _, _):
        process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        while "SIGINT received" not in runs.terminal(process):  # the first is being handled
            assert time.monotonic() < deadline, runs.terminal(process)[-3000:]
            time.sleep(0.01)
        stopped_already = "campaign stopped by SIGINT" in runs.terminal(process)
        again = time.monotonic()
        process.send_signal(signal.SIGINT)
        exit_s, gone_s, left = _exit_and_leftovers(process, started, again, 30)
    print(f"second SIGINT: exit {exit_s:.2f} s after it, its processes gone "
          f"{exit_s + gone_s:.1f} s after it (the clean stop over before it: {stopped_already})")
    said = runs.terminal(process)
    assert process.returncode == 130, said[-3000:]
    # mid-stop the handler exits; a stop over first exits by itself, without the teardown an
    # interpreter's exit spends after a local Ray (2.7 s in CI, where no handler runs)
    assert "second SIGINT: exiting now" in said or "campaign stopped by SIGINT" in said, said[-3000:]
    assert exit_s < 2.0
    assert not left and gone_s < LEFTOVER_LIMIT_S, left


def test_sigterm_on_an_attached_cluster_kills_the_campaigns_actors_and_leaves_it_running(
        shared_ray, reference, interpreter_fitness, tmp_path):
    def actors() -> set:  # the actor processes of the test session's own local Ray
        return runs.actor_pids(os.getpid())

    address = shared_ray.get_runtime_context().gcs_address
    config_path, out = runs.config_file(tmp_path), tmp_path / "run"
    before = actors()
    process = runs.start(config_path, out, "--address", address)
    try:
        runs.wait_for_generation(process, out, 2)
        campaigns = actors() - before
        assert len(campaigns) == 3, campaigns  # its fitness actor and two islands
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=STOP_LIMIT_S + 30)
        exit_s = time.monotonic() - signalled
        while actors() & campaigns and time.monotonic() - signalled < exit_s + LEFTOVER_LIMIT_S:
            time.sleep(0.05)
        gone_s = time.monotonic() - signalled
    finally:
        runs.kill_leftovers(process, [])
    print(f"SIGTERM on a cluster: exit {exit_s:.1f} s, its actors gone {gone_s:.1f} s after it")
    said = runs.terminal(process)
    assert process.returncode == 143, said[-3000:]
    assert not actors() & campaigns and exit_s < STOP_LIMIT_S
    assert f"--resume --address {address}" in said.strip().splitlines()[-1]
    assert shared_ray.get(interpreter_fitness[0].device.remote(), timeout=60)  # still up
    campaign.run_campaign(config_lib.load(config_path), out, resume=True,
                          fitness_actors=interpreter_fitness)
    assert runs.rows(out) == reference
