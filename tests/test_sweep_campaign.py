"""`evo sweep` end to end: real offline campaigns under the Triton interpreter, skipped when
done, continued when given more generations, then compared by `evo report`."""

import json

import pyarrow.parquet as pq
import pytest

from evo import sweep
from evo.analysis import report
from offline_sweeps import sweep_toml

pytestmark = pytest.mark.slow  # `evo sweep` of real campaigns: `make test-fast` leaves it out

SWEEP = sweep_toml("tiny", '"search.islands" = [1, 2]\n[set]\n"search.generations" = GENERATIONS')


def _run(tmp_path, generations, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(SWEEP.replace("GENERATIONS", str(generations)))
    sweep.main(path, out=tmp_path / "out")
    return capsys.readouterr().out


def test_sweep_runs_skips_and_continues_cells(tmp_path, capsys, shared_ray):
    first = _run(tmp_path, 1, capsys)
    out = tmp_path / "out"
    assert "islands-1: done" in first and "islands-2: done" in first
    wide = out / "islands-2"
    assert json.loads((wide / "sweep_cell.json").read_text())["status"] == "done"
    part_1 = [part.read_bytes() for part in sorted((wide / "evaluations").glob("part-00001-*"))]
    assert set(pq.read_table(wide / "evaluations").column("island").to_pylist()) == {0, 1}

    again = _run(tmp_path, 1, capsys)
    assert "islands-1: skipped (done)" in again and "islands-2: skipped (done)" in again

    longer = _run(tmp_path, 2, capsys)
    assert "islands-2: partial" in longer and "islands-2: done" in longer
    assert [part.read_bytes() for part in sorted((wide / "evaluations").glob("part-00001-*"))] \
        == part_1
    generations = pq.read_table(wide / "evaluations").column("generation").to_pylist()
    assert sorted(set(generations)) == [0, 1, 2]  # 0: the seeds

    report.main(out, as_json=True)
    compared = json.loads(capsys.readouterr().out)
    assert sorted(c["cell"] for c in compared["cells"]) == ["islands-1", "islands-2"]
    spent = {c["cell"]: c["spend"]["evaluations"] for c in compared["cells"]}
    assert spent["islands-2"] > spent["islands-1"] > 0
    assert compared["equal_compute"]["evaluations"][0]["budget"] == spent["islands-1"]
