"""`evo sweep`: grid expansion, stable cell names, validation before running, and the
skip / resume bookkeeping of cell folders."""

import json
import re
from pathlib import Path

import pytest

from evo import config as config_lib
from evo import sweep
from evo.config import ConfigError

BASE = """
[campaign]
name = "base"
tasks = ["vector_add"]
[search]
generations = 1
population = 2
offspring = 2
[operators]
mode = "offline"
[fitness]
device = "interpreter"
"""


def _write_sweep(folder: Path, body: str, base: str = BASE) -> Path:
    (folder / "base.toml").write_text(base)
    path = folder / "sweep.toml"
    path.write_text(body)
    return path


GRID = """
[sweep]
name = "demo"
base = "base.toml"
[grid]
"search.islands" = [1, 2]
"operators.crossover" = [true, false]
"campaign.seed" = [0, 1, 2]
[set]
"search.generations" = 2
"""


def test_grid_expands_to_every_combination_with_validated_configs(tmp_path):
    cells = sweep.expand(sweep.load_sweep(_write_sweep(tmp_path, GRID)))
    assert len(cells) == 12
    assert len({c.name for c in cells}) == 12
    cell = next(c for c in cells if c.overrides == {"search.islands": 2, "operators.crossover": False,
                                                     "campaign.seed": 1})
    assert cell.name == "seed-1__crossover-off__islands-2"
    assert isinstance(cell.config, config_lib.Config)
    assert (cell.config.search.islands, cell.config.operators.crossover, cell.config.campaign.seed,
            cell.config.search.generations) == (2, False, 1, 2)
    assert cell.config.campaign.name == "demo-seed-1__crossover-off__islands-2"
    assert cell.config.campaign.tasks == ("vector_add",)  # the rest comes from the base


def test_cell_names_do_not_depend_on_grid_order():
    forward = sweep.cell_name({"search.islands": 2, "campaign.seed": 0})
    assert forward == sweep.cell_name({"campaign.seed": 0, "search.islands": 2})
    assert sweep.cell_name({"operators.model": "org/model v2"}) == "model-org-model-v2"
    long_name = sweep.cell_name({"operators.base_url": "http://" + "x" * 300})
    assert len(long_name) == 100


def test_inline_base_is_accepted(tmp_path):
    body = "[grid]\n\"search.islands\" = [1, 3]\n" + re.sub(r"^\[", "[base.", BASE, flags=re.M)
    path = tmp_path / "inline.toml"
    path.write_text(body)
    cells = sweep.expand(sweep.load_sweep(path))
    assert [c.config.search.islands for c in cells] == [1, 3]
    assert cells[0].config.campaign.name == "inline-islands-1"  # sweep name: the file stem


@pytest.mark.parametrize("grid, message", [
    ('"search.generatoins" = [1, 2]',
     "unknown key \\(did you mean 'generations'\\?\\); allowed keys in \\[search\\]"),
    ('"searchgenerations" = [1]', "not of the form section.key"),
    ('"search.islands" = []', "non-empty list"),
    ('"search.islands" = 3', "non-empty list"),
    ('"search.islands" = [1, 1]', "repeats a value"),
    ('"search.islands" = [1, 0]', "sweep cell islands-0: invalid config"),
    ('"operators.mode" = ["offline", "psychic"]', "sweep cell mode-psychic"),
])
def test_bad_grids_fail_before_anything_runs(tmp_path, grid, message):
    path = _write_sweep(tmp_path, f'[sweep]\nbase = "base.toml"\n[grid]\n{grid}\n')
    with pytest.raises(ConfigError, match=message):
        sweep.expand(sweep.load_sweep(path))


def test_malformed_sweep_files_are_named(tmp_path):
    with pytest.raises(ConfigError, match="sweep file not found"):
        sweep.load_sweep(tmp_path / "missing.toml")
    no_base = _write_sweep(tmp_path, '[grid]\n"search.islands" = [1]\n')
    with pytest.raises(ConfigError, match="exactly once"):
        sweep.load_sweep(no_base)
    no_grid = _write_sweep(tmp_path, '[sweep]\nbase = "base.toml"\n')
    with pytest.raises(ConfigError, match="\\[grid\\] is missing"):
        sweep.load_sweep(no_grid)
    typo = _write_sweep(tmp_path, '[sweep]\nbase = "base.toml"\n[grids]\n')
    with pytest.raises(ConfigError, match="unknown table"):
        sweep.load_sweep(typo)


def test_unknown_task_in_a_cell_fails_before_running(tmp_path):
    path = _write_sweep(tmp_path, '[sweep]\nbase = "base.toml"\n[grid]\n'
                                  '"campaign.tasks" = [["vector_add"], ["no_such_task"]]\n')
    with pytest.raises(ConfigError, match="no_such_task"):
        sweep.main(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _campaign_json(folder, cell):
    (folder / "campaign.json").write_text(json.dumps({"config": cell.config.model_dump(mode="json")}))


def test_cell_state_tracks_pending_partial_done(tmp_path):
    cell = sweep.expand(sweep.load_sweep(_write_sweep(tmp_path, GRID)))[0]
    folder = tmp_path / "out" / cell.name
    assert sweep.cell_state(folder, cell) == "pending"
    sweep._write_marker(folder, cell, status="running")
    assert sweep.cell_state(folder, cell) == "pending"  # killed before the campaign began
    _campaign_json(folder, cell)
    assert sweep.cell_state(folder, cell) == "partial"
    sweep._write_marker(folder, cell, status="failed", error="boom")
    assert sweep.cell_state(folder, cell) == "partial"
    sweep._write_marker(folder, cell, status="done", stopped_by=None)
    assert sweep.cell_state(folder, cell) == "done"
    marker = json.loads((folder / "sweep_cell.json").read_text())
    assert marker["overrides"] == cell.overrides


def test_a_done_cell_given_more_generations_is_continued(tmp_path):
    cell = sweep.expand(sweep.load_sweep(_write_sweep(tmp_path, GRID)))[0]
    folder = tmp_path / "out" / cell.name
    folder.mkdir(parents=True)
    _campaign_json(folder, cell)
    sweep._write_marker(folder, cell, status="done")
    longer = sweep.expand(sweep.load_sweep(_write_sweep(
        tmp_path, GRID.replace('"search.generations" = 2', '"search.generations" = 5'))))[0]
    assert longer.name == cell.name
    assert sweep.cell_state(folder, longer) == "partial"


def test_a_cell_run_with_another_config_is_refused(tmp_path):
    cells = sweep.expand(sweep.load_sweep(_write_sweep(tmp_path, GRID)))
    folder = tmp_path / "out" / cells[0].name
    folder.mkdir(parents=True)
    _campaign_json(folder, cells[1])
    with pytest.raises(ConfigError, match="(?s)another config.*campaign.seed: 1 -> 0"):
        sweep.cell_state(folder, cells[0])


def test_experiment_configs_parse():
    root = Path(__file__).resolve().parent.parent / "experiments"
    questions = [root / name for name in ("geak_sequential.toml", "geak_parallel.toml",
                                          "ablation_modules.toml", "overnight.toml")]
    questions += sorted(root.glob("sweeps/*.toml"))
    for path in questions:
        assert path.read_text().startswith("# Question:"), f"{path} does not open with its question"
    for path in sorted(root.glob("*.toml")) + sorted(root.glob("sweeps/*.toml")):
        if "[sweep]" in path.read_text():
            assert sweep.expand(sweep.load_sweep(path)), path
        else:
            config_lib.load(path)
    sequential = config_lib.load(root / "geak_sequential.toml").search
    assert (sequential.islands, sequential.generations) == (1, 20)
    parallel = config_lib.load(root / "geak_parallel.toml").search
    assert (parallel.islands, parallel.generations, parallel.migration_interval) == (10, 10, 0)
    ablation = sweep.expand(sweep.load_sweep(root / "ablation_modules.toml"))
    assert len(ablation) == 8
