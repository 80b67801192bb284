"""`evo sweep --set section.key=value` sets a key in every cell, as `evo run --set` sets it in
one campaign: over the sweep file's [set], validated with every cell before any runs, kept in
the command that continues; a [grid] key is refused (the grid gives it its values)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evo import sweep as sweep_lib
from evo.config import ConfigError
from offline_sweeps import sweep_toml

ROOT = Path(__file__).resolve().parents[1]

SWEEP = sweep_toml("set-test", '"search.islands" = [1, 2]', search="generations = 3") + """
[set]
"search.population" = 3
"""


@pytest.fixture()
def sweep_file(tmp_path) -> Path:
    path = tmp_path / "set_test.toml"
    path.write_text(SWEEP)
    return path


def test_set_reaches_every_cell_over_the_files_set(sweep_file):
    sweep = sweep_lib.load_sweep(sweep_file, ["search.generations=1", "search.population=4"])
    cells = sweep_lib.expand(sweep)
    assert [cell.config.search.islands for cell in cells] == [1, 2]
    assert {(cell.config.search.generations, cell.config.search.population)
            for cell in cells} == {(1, 4)}


def test_set_on_a_grid_key_is_refused(sweep_file):
    with pytest.raises(ConfigError, match=r"--set search.islands=4: search.islands is a \[grid\] key"):
        sweep_lib.load_sweep(sweep_file, ["search.islands=4"])


def test_evo_sweep_set_is_validated_with_every_cell_before_any_runs(sweep_file, tmp_path):
    out = tmp_path / "out"
    ran = subprocess.run([sys.executable, "-m", "evo", "sweep", str(sweep_file), "--out", str(out),
                          "--set", "search.generations=-1"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert "sweep cell islands-1: invalid config" in ran.stderr, ran.stderr[-2000:]
    assert "search.generations" in ran.stderr
    assert not out.exists()  # nothing ran


def test_a_misspelt_key_in_set_says_what_was_meant(sweep_file):
    with pytest.raises(ConfigError, match=r"--set key 'search.generatons': unknown key "
                                          r"\(did you mean 'generations'\?\)"):
        sweep_lib.load_sweep(sweep_file, ["search.generatons=1"])
