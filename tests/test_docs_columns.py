"""docs/columns.md documents every Parquet column a results folder holds: each column of
`evo.results`' two schemas has a row there, with the Arrow type the schema gives it, a unit
and a meaning."""

import pathlib
import re

import pytest

from evo import results

COLUMNS_DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "columns.md"
ROW = re.compile(r"^\| `(?P<name>[a-z_0-9]+)` \| (?P<type>[^|]+) \| (?P<unit>[^|]+) \| "
                 r"(?P<meaning>[^|]+) \|$")


def documented(section: str) -> dict[str, dict]:
    """Returns the rows of the table under `## `section``: column name -> its cells."""
    text = COLUMNS_DOC.read_text()
    body = text.split(f"## `{section}`", 1)[1].split("\n## ", 1)[0]
    return {match["name"]: {key: value.strip() for key, value in match.groupdict().items()}
            for match in map(ROW.match, body.splitlines()) if match}


def arrow_type(field) -> str:
    """Returns a field's Arrow type as the doc writes it (`list<double>`, not `list<item: double>`)."""
    return str(field.type).replace("item: ", "")


@pytest.mark.parametrize("section, schema", [("evaluations/", results.EVALUATION_SCHEMA),
                                             ("llm_calls/", results.LLM_CALL_SCHEMA)])
def test_every_parquet_column_has_its_type_unit_and_meaning_in_docs_columns(section, schema):
    rows = documented(section)
    missing = [field.name for field in schema if field.name not in rows]
    assert not missing, f"docs/columns.md, {section}: no row for {missing}"
    wrong_type = {field.name: (rows[field.name]["type"], arrow_type(field)) for field in schema
                  if rows[field.name]["type"] != arrow_type(field)}
    assert not wrong_type, f"docs/columns.md, {section}: (documented, real) types {wrong_type}"
    empty = [name for name, cells in rows.items() if not cells["unit"] or len(cells["meaning"]) < 10]
    assert not empty, f"docs/columns.md, {section}: no unit or meaning for {empty}"
    stale = sorted(set(rows) - set(schema.names))
    assert not stale, f"docs/columns.md, {section}: rows for columns the schema lacks: {stale}"
