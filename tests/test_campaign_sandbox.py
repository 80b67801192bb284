"""`[fitness] sandbox`: a campaign refuses to score without the OS sandbox unless told, and
then says so on every progress line and in every row."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """
[campaign]
name = "walls"
tasks = ["vector_add"]
[search]
generations = 1
population = 2
offspring = 1
islands = 1
[operators]
mode = "offline"
[fitness]
device = "interpreter"
workers = 1
"""


def _evo_run(tmp_path, *extra, env_extra=None):
    config_path = tmp_path / "walls.toml"
    config_path.write_text(CONFIG)
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "evo", "run", str(config_path), "--out",
                           str(tmp_path / "run"), *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_campaign_without_a_working_sandbox_stops_with_one_clear_line(tmp_path):
    done = _evo_run(tmp_path, env_extra={"KERNELEVO_BWRAP": str(tmp_path / "no-bwrap")})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "fitness.sandbox" in done.stderr and "apt-get install bubblewrap" in done.stderr
    assert not list((tmp_path / "run").rglob("*.parquet"))  # nothing was scored


def test_campaign_with_the_sandbox_off_marks_every_line_and_row(tmp_path):
    done = _evo_run(tmp_path, "--set", 'fitness.sandbox="off"')
    assert done.returncode == 0, done.stdout + done.stderr
    progress = [line for line in done.stdout.splitlines() if " gen " in line]
    assert progress and all(line.endswith("[UNSANDBOXED]") for line in progress), done.stdout
    rows = pd.read_parquet(tmp_path / "run" / "evaluations")
    assert len(rows) > 0 and not rows["sandboxed"].any()
