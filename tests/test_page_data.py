"""What the HTML page is made from, read fast: Parquet parts read once and kept until they
change (evo.analysis.parts), a part that lands or is rewritten under its name read again, a
lineage row's source read from its part as it was when its rows were read
(evo.analysis.snapshot), and each row's cases against torch.compile (evo.analysis.timelines).
Real Parquet parts on disk, as the engine writes them."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evo.analysis import lineage, parts, snapshot, timelines, torch_comparison
from evo.results import EVALUATION_SCHEMA
from synthetic_results import evaluation, write_campaign

COLUMNS = ("task", "generation", "speedup")


def _write_part(path, rows):
    pq.write_table(pa.Table.from_pylist(rows, schema=EVALUATION_SCHEMA), path)


def _row(generation, speedup, source="def f(): pass\n"):
    row = evaluation("add", 0, generation, call_ok=True, correct=True, speedup=speedup)
    return {**row, "source": source, "candidate_id": f"c{generation}-{speedup}"}


def _folder(tmp_path):
    return write_campaign(tmp_path / "c", [_row(1, 1.5), _row(2, 2.0)], islands=1)


def _same_size_and_time(path, data):
    """Overwrites `path` with `data` (as long as the old content) and puts its mtime back."""
    stat = path.stat()
    assert len(data) == stat.st_size
    path.write_bytes(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_part_read_before_is_kept_and_one_that_lands_is_read(tmp_path):
    folder = _folder(tmp_path) / "evaluations"
    reader = parts.PartReader()
    first = reader.read(folder, COLUMNS)
    assert first.table.column("speedup").to_pylist() == [1.5, 2.0] and first.skipped == ()
    # Garbage of the same size and mtime: a reader that opened the part again would skip it.
    part = folder / "part-00001.parquet"
    _same_size_and_time(part, b"\0" * part.stat().st_size)
    _write_part(folder / "part-00003.parquet", [_row(3, 3.0)])
    second = reader.read(folder, COLUMNS)
    assert second.table.column("speedup").to_pylist() == [1.5, 2.0, 3.0]
    assert second.row_counts == (1, 1, 1) and second.skipped == ()
    assert second.table.column("written_at").to_pylist()[2] == \
        (folder / "part-00003.parquet").stat().st_mtime
    assert parts.PartReader().read(folder, COLUMNS).skipped == ("evaluations/part-00001.parquet",)


def test_a_part_rewritten_under_its_name_or_removed_is_read_again(tmp_path):
    folder = _folder(tmp_path) / "evaluations"
    reader = parts.PartReader()
    reader.read(folder, COLUMNS)
    part = folder / "part-00002.parquet"
    _write_part(part, [_row(2, 4.0), _row(2, 5.0)])
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 1_000_000))
    assert reader.read(folder, COLUMNS).table.column("speedup").to_pylist() == [1.5, 4.0, 5.0]
    (folder / "part-00001.parquet").unlink()
    again = reader.read(folder, COLUMNS)
    assert again.table.column("speedup").to_pylist() == [4.0, 5.0]
    assert [os.path.basename(p.path) for p in again.parts] == ["part-00002.parquet"]


def test_only_the_columns_asked_for_are_read(tmp_path):
    folder = _folder(tmp_path) / "evaluations"
    table = parts.PartReader().read(folder, ("task", "parent_ids", "no_such_column")).table
    assert table.column_names == ["task", "parent_ids", "written_at"]


def test_the_page_reads_sources_only_from_the_parts_of_rows_it_shows(tmp_path):
    folder = write_campaign(tmp_path / "c", [_row(1, 1.5, "one\n"), _row(2, 2.0, "two\n")],
                            islands=1)
    state = snapshot.read(folder)
    evaluations = state.results.evaluations
    assert set(snapshot.DETAIL_COLUMNS + ("parent_ids",)).isdisjoint(evaluations)
    assert state.detail(1)["source"] == "two\n"
    # Part 1 damaged after the rows were read, size and mtime kept: its source was never read
    # and now cannot be; part 2's was read when asked for, and is kept.
    part = folder / "evaluations" / "part-00001.parquet"
    _same_size_and_time(part, b"\0" * part.stat().st_size)
    assert state.detail(0) == {"parent_ids": []}  # read with the rows
    (folder / "evaluations" / "part-00002.parquet").unlink()
    assert state.detail(1)["source"] == "two\n"


def test_a_lineage_is_walked_by_parent_ids_and_its_sources_read_beforehand(tmp_path):
    chain = [{**_row(g, 1.0 + g, f"source {g}\n"), "candidate_id": f"c{g}",
              "parent_ids": [f"c{g - 1}"] if g > 1 else []} for g in (1, 2, 3)]
    other = {**_row(3, 9.0), "candidate_id": "other", "parent_ids": ["c1"]}
    folder = write_campaign(tmp_path / "c", chain + [other], islands=1)
    state = snapshot.read(folder)
    rows = state.results.evaluations
    shown = lineage.walked_rows(rows, "c3", state.details.parents)
    assert list(rows.loc[shown, "candidate_id"]) == ["c3", "c2", "c1"]
    state.details.fetch(shown)
    for part in (folder / "evaluations").glob("part-*.parquet"):
        _same_size_and_time(part, b"\0" * part.stat().st_size)  # nothing is read again
    assert [state.detail(label)["source"] for label in shown] == \
        ["source 3\n", "source 2\n", "source 1\n"]


def test_only_the_rows_asked_for_are_kept_of_a_part(tmp_path):
    rows = [_row(1, 1.5, "first\n"), {**_row(1, 2.0, "second\n"), "candidate_id": "other"}]
    folder = write_campaign(tmp_path / "c", rows, islands=1)
    state = snapshot.read(folder)
    assert state.detail(0)["source"] == "first\n"
    part = folder / "evaluations" / "part-00001.parquet"
    _same_size_and_time(part, b"\0" * part.stat().st_size)
    assert state.detail(0)["source"] == "first\n"  # kept
    assert "source" not in state.detail(1)  # not kept: its part is read again, and fails now


def test_a_row_whose_part_was_rewritten_since_shows_no_details(tmp_path):
    folder = write_campaign(tmp_path / "c", [_row(1, 1.5, "old\n")], islands=1)
    state = snapshot.read(folder)
    part = folder / "evaluations" / "part-00001.parquet"
    _write_part(part, [_row(1, 9.0, "new and longer\n")])
    assert state.detail(0) == {"parent_ids": []}  # the new part's source is not the row's
    assert snapshot.read(folder).detail(0)["source"] == "new and longer\n"


def _torch_rows(folder, rows):
    """Writes `rows` (name, case_names, latency_us) as correct rows on one GPU, and torch's
    default-mode timings of cases a (30 us) and b (15 us)."""
    write_campaign(folder, [
        {**evaluation("add", 0, 1, call_ok=True, correct=True, speedup=2.0),
         "candidate_id": name, "case_names": cases, "latency_us": latencies,
         "ref_latency_us": [20.0] * len(latencies), "device": "gpu"}
        for name, cases, latencies in rows], islands=1)
    timings = [{"task": "add", "case": case, "mode": mode, "device": "gpu", "status": "ok",
                "median_us": us, "floor_us": 1.0, "copy_floor_us": 1.0, "bound": "memory",
                "torch_op": "reference", "torch_version": "2.9", "copy_gbs": 3000.0}
               for case, us in (("a", 30.0), ("b", 15.0)) for mode in torch_comparison.MODES]
    pq.write_table(pa.Table.from_pylist(timings), folder / torch_comparison.TIMINGS_FILE)
    results = snapshot.read(folder).results
    return results, torch_comparison.comparison(results)


def test_speedup_over_torch_is_over_every_case_of_a_row(tmp_path):
    results, versus = _torch_rows(tmp_path / "c", [
        ("both", ["a", "b"], [10.0, 20.0]), ("one", ["b"], [5.0]),
        ("untimed case", ["a", "z"], [10.0, 10.0])])
    speedups = timelines.torch_speedups(results, versus)
    ids = results.evaluations.loc[speedups.index, "candidate_id"]
    assert dict(zip(ids, speedups)) == pytest.approx({"both": (3.0 * 0.75) ** 0.5, "one": 3.0})


def test_cases_that_do_not_line_up_with_latencies_are_an_error(tmp_path):
    results, versus = _torch_rows(tmp_path / "c", [("bad", ["a", "b"], [10.0, 20.0, 30.0])])
    with pytest.raises(ValueError, match="case_names and latency_us differ in length"):
        timelines.torch_speedups(results, versus)
