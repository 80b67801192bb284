"""docs/config.md is generated from the typed settings (`python -m evo.config_reference`): it
matches them, lists every key of every section and nested table with its meaning, and a key
written without a meaning stops the generation."""

import dataclasses
from typing import Literal, Optional

import pytest
from pydantic import BaseModel, Field

from evo import config, config_reference


class _Base(BaseModel):
    """[demo]: a section.

    Attributes:
      size: how many, a meaning that
        runs on over two lines.
      mode: replaced by the subclass's words.
    """

    size: int = Field(default=3, ge=1)
    mode: Literal["a", "b"] = "a"


class _Documented(_Base):
    """[demo]: a section with its own keys."""

    mode: Literal["a", "b"] = "b"
    """The subclass's meaning."""
    label: Optional[str] = None
    """A label,
    over two lines."""


class _Undocumented(_Base):
    """[demo]: a key below has no meaning."""

    forgotten: bool = True


@dataclasses.dataclass(frozen=True)
class _Table:
    """A nested table.

    Attributes:
      limit_s: a limit.
    """

    limit_s: float = 1.5


def test_docs_config_md_matches_the_settings():
    written = config_reference.OUT.read_text() if config_reference.OUT.exists() else ""
    assert written == config_reference.render(), (
        "docs/config.md is out of date with the settings; regenerate it: "
        f".venv/bin/python -m evo.config_reference ({config_reference.COMMAND})")


def test_every_key_of_every_section_and_nested_table_is_in_the_reference():
    text = config_reference.render()
    for name, section in config.SECTIONS.items():
        body = text.split(f"## [{name}]\n", 1)[1].split("\n## ", 1)[0]
        for key in section.model_fields:
            assert f"| `{key}` |" in body, f"{name}.{key}"
    assert "| `compile_s` | float | `180.0` |" in text.split("### [fitness.timeouts]\n", 1)[1]


def test_meanings_come_from_attributes_blocks_and_attribute_docstrings():
    assert config_reference.meanings(_Documented) == {
        "size": "how many, a meaning that runs on over two lines.",
        "mode": "The subclass's meaning.",
        "label": "A label, over two lines."}
    size, mode, label = config_reference.keys(_Documented)
    assert (size.default, size.bounds, mode.default, label.default) == (3, ">= 1", "b", None)
    assert config_reference.keys(_Table)[0].meaning == "a limit."


def test_a_key_without_a_meaning_stops_the_generation():
    with pytest.raises(ValueError, match=r"_Undocumented: no meaning for \['forgotten'\]"):
        config_reference.keys(_Undocumented)


@pytest.mark.parametrize("annotation, text", [
    (int, "integer"),
    (Literal["llm", "offline"], '"llm" | "offline"'),
    (Optional[float], "float or unset"),
    (tuple[str, ...], "array of string"),
    (dict[str, tuple[float, float]], "table of string -> [float, float]"),
    (Optional[_Table], "table or unset"),
])
def test_types_are_named_as_toml_names_them(annotation, text):
    assert config_reference.type_text(annotation) == text


def test_defaults_are_written_as_toml_writes_them():
    def default(annotation, value, required=False):
        return config_reference.default_text(
            config_reference.Key("k", annotation, value, required, "", ""))

    assert default(str, None, required=True) == "required"
    assert default(bool, False) == "false"
    assert default(tuple[str, ...], ("a",)) == '["a"]'
    assert default(Optional[int], None) == "unset"
    assert default(_Table, _Table()) == "its table's defaults"
