"""Ctrl-C on a real `evo sweep`: it exits 130 with one line naming the cell it stopped and the
command that continues, the cell is marked "stopped" (not left "running"), and running the
same command again resumes that cell and finishes the sweep."""

import json
import signal
import subprocess
import sys
import time

import pytest

import campaign_processes as runs
from offline_sweeps import sweep_toml

pytestmark = pytest.mark.slow  # real campaigns in a subprocess: `make test-fast` leaves it out

SWEEP = sweep_toml("stoppable", '"campaign.seed" = [0, 1]', search="generations = 6")


def _sweep(path, out, terminal):
    return subprocess.Popen([sys.executable, "-m", "evo", "sweep", str(path), "--out", str(out)],
                            cwd=runs.ROOT, env=runs.clean_env(), stdout=open(terminal, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def test_sigint_stops_the_sweep_naming_the_cell_and_the_same_command_continues(tmp_path):
    path, out = tmp_path / "stoppable.toml", tmp_path / "out"
    path.write_text(SWEEP)
    first = out / "seed-0"
    process = _sweep(path, out, tmp_path / "first.terminal")
    started = []
    try:
        deadline = time.monotonic() + 240
        while not list((first / "evaluations").glob("part-00001-*.parquet")):
            assert process.poll() is None, (tmp_path / "first.terminal").read_text()[-3000:]
            assert time.monotonic() < deadline, "the first cell never reached generation 1"
            time.sleep(0.05)
        started = runs.descendants(process.pid)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=90)
    finally:
        runs.kill_leftovers(process, started)
    said = (tmp_path / "first.terminal").read_text()
    assert process.returncode == 130, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert said.strip().splitlines()[-1] == (
        "sweep stoppable stopped by SIGINT in cell 1/2 seed-0 (the cell keeps its last "
        f"checkpoint); run the same command to continue: evo sweep {path} --out {out}")
    marker = json.loads((first / "sweep_cell.json").read_text())
    assert (marker["status"], marker["stopped_by"]) == ("stopped", "SIGINT")
    assert not (out / "seed-1").exists()

    again = subprocess.run([sys.executable, "-m", "evo", "sweep", str(path), "--out", str(out)],
                           cwd=runs.ROOT, env=runs.clean_env(), capture_output=True, text=True,
                           timeout=500)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert "cell 1/2 seed-0: partial" in again.stdout
    assert "resuming stoppable-seed-0: " in again.stdout
    for cell in ("seed-0", "seed-1"):
        assert json.loads((out / cell / "sweep_cell.json").read_text())["status"] == "done"
        assert f"{cell}: done" in again.stdout
