"""A local Ray killed under a running `evo run` (as `ray stop --force` kills it: SIGKILL to its
GCS, raylet and workers) ends the run with one plain line (the cause, what was kept, the
command that continues) and a non-zero status, long before Ray's own driver code would end
it in silence (a minute later); its evo-run.log holds text, and so it does after the resume,
which completes the campaign."""

import contextlib
import json
import time

import pytest

import campaign_processes as runs
from evo import campaign, config as config_lib, fatal, run_log

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

EXIT_LIMIT_S = 30.0
"""Well before the minute after which Ray itself ends a driver whose GCS is gone."""


def _kill_the_local_ray(started: list) -> list[str]:
    """SIGKILLs the GCS, the raylet and the Ray workers among `started`; returns their names."""
    import psutil

    killed = []
    for process in started:
        with contextlib.suppress(psutil.Error):
            name, command = process.name(), process.cmdline()
            if name in ("gcs_server", "raylet") or command[:1] and command[0].startswith("ray::"):
                process.kill()
                killed.append(name)
    return killed


def test_a_local_ray_killed_mid_run_ends_it_with_one_line_and_the_resume_completes(
        interpreter_fitness, tmp_path):
    config_path, out = runs.config_file(tmp_path), tmp_path / "run"
    process = runs.start(config_path, out)
    started = []
    try:
        runs.wait_for_generation(process, out, 1)
        started = runs.descendants(process.pid)
        killed = _kill_the_local_ray(started)
        assert {"gcs_server", "raylet"} <= set(killed), killed
        at = time.monotonic()
        process.wait(timeout=EXIT_LIMIT_S + 30)
        exit_s = time.monotonic() - at
        gone_s = runs.seconds_until_gone(started, 20)
        left = [(p.pid, p.name()) for p in runs.alive(started)]
    finally:
        runs.kill_leftovers(process, started)
    said = runs.terminal(process)
    print(f"Ray killed: evo exited {exit_s:.1f} s later")

    assert process.returncode == fatal.EXIT_STATUS, said[-3000:]
    assert exit_s < EXIT_LIMIT_S
    assert not left and gone_s < 10, left
    last = said.strip().splitlines()[-1]
    assert last.startswith("the local Ray stopped under the campaign (its gcs_server"), said[-3000:]
    assert f"continue with: evo run {config_path} --out {out} --resume" in last
    assert f"traceback in {out / run_log.LOG_NAME}" in last
    logged = (out / run_log.LOG_NAME).read_text()
    assert "\0" not in logged and "the local Ray stopped under the campaign" in logged
    assert "the campaign was at:" in logged  # the main thread's stack, for a bug report
    stop = json.loads((out / "campaign.json").read_text())["stop"]  # what `evo report` shows
    assert stop["stopped_by"] == "fatal" and stop["reason"].startswith("the local Ray stopped")

    summary = campaign.run_campaign(config_lib.load(config_path), out, resume=True,
                                    fitness_actors=interpreter_fitness)
    assert summary.generations_done == runs.GENERATIONS
    logged = (out / run_log.LOG_NAME).read_text()
    assert "\0" not in logged and logged.count("--- evo run started at ") == 2
    assert not (out / run_log.RESERVE_NAME).exists()
