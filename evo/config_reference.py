"""`python -m evo.config_reference`: writes docs/config.md, every config key with its type,
default and meaning, generated from the typed settings so that the reference cannot drift
from what `evo.config.load` accepts (tests/test_config_reference.py fails when it is stale).

A key's meaning is read where the key is defined: its entry in the `Attributes:` block of its
class's docstring (the house style), or, in a class with more keys than a 15-line docstring
holds, the string right below the key (an attribute docstring). A key with neither stops the
generation, naming it. A key whose value is itself a dataclass or model is a nested TOML
table (`[fitness.timeouts]`) and gets its own table.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from evo import config as config_lib
from evo.records import parse_source

OUT = Path(__file__).resolve().parent.parent / "docs" / "config.md"
SWEEP = Path(__file__).resolve().parent / "sweep.py"  # its docstring is the sweep file format
COMMAND = "python -m evo.config_reference"
_ENTRY = re.compile(r"^(\s+)(\w+): (.*)$")
_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"), ("min_length", "length >="))


class Key(NamedTuple):
    """One row of the reference: a TOML key of a section or nested table."""

    name: str
    annotation: Any
    default: Any
    required: bool
    bounds: str
    meaning: str


def meanings(cls: type) -> dict[str, str]:
    """Returns key -> meaning for `cls` and the classes it inherits keys from (a subclass's
    words win), from `Attributes:` entries and attribute docstrings."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or issubclass(BaseModel, klass):
            continue
        found.update(_attribute_entries(inspect.getdoc(klass) or ""))
        found.update(_attribute_docstrings(klass))
    return found


def _attribute_entries(doc: str) -> dict[str, str]:
    """Returns name -> text of a docstring's `Attributes:` block (continuations indented)."""
    lines = doc.splitlines()
    if "Attributes:" not in lines:
        return {}
    entries: dict[str, list[str]] = {}
    indent = None
    for line in lines[lines.index("Attributes:") + 1:]:
        entry = _ENTRY.match(line)
        if entry and indent in (None, len(entry.group(1))):
            indent = len(entry.group(1))
            entries[entry.group(2)] = [entry.group(3)]
        elif entries and line.strip() and len(line) - len(line.lstrip()) > indent:
            entries[list(entries)[-1]].append(line.strip())
        else:
            break
    return {name: " ".join(words) for name, words in entries.items()}


def _attribute_docstrings(klass: type) -> dict[str, str]:
    """Returns name -> the string literal right below each annotated key of the class body."""
    body = parse_source(textwrap.dedent(inspect.getsource(klass))).body[0].body
    found = {}
    for statement, after in zip(body, body[1:]):
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            found[statement.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return found


def keys(cls: type) -> list[Key]:
    """Returns the keys of a section or nested table in definition order; raises ValueError
    naming a key that has no meaning."""
    words = meanings(cls)
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        fields = [(f.name, hints[f.name], f.default_factory() if
                   f.default is dataclasses.MISSING else f.default, False, "")
                  for f in dataclasses.fields(cls)]
    else:
        fields = [(name, f.annotation, None if f.is_required() else
                   f.get_default(call_default_factory=True), f.is_required(), _bounds(f.metadata))
                  for name, f in cls.model_fields.items()]
    missing = [name for name, *_ in fields if name not in words]
    if missing:
        raise ValueError(f"{cls.__module__}.{cls.__qualname__}: no meaning for {missing}; "
                         "write one in its Attributes: block or as a string below the key")
    return [Key(name, annotation, default, required, bounds, words[name])
            for name, annotation, default, required, bounds in fields]


def _bounds(metadata: list) -> str:
    """Returns the constraints pydantic enforces on a key, e.g. ">= 0, <= 2.0"."""
    return ", ".join(f"{symbol} {getattr(item, name)}" for item in metadata
                     for name, symbol in _BOUNDS if getattr(item, name, None) is not None)


def _table_of(annotation: Any) -> type | None:
    """The dataclass or model a key holds (a nested TOML table), Optional unwrapped; or None."""
    options = [a for a in typing.get_args(annotation) if a is not type(None)]
    inner = options[0] if _is_union(annotation) and len(options) == 1 else annotation
    is_table = inspect.isclass(inner) and (dataclasses.is_dataclass(inner)
                                           or issubclass(inner, BaseModel))
    return inner if is_table else None


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def type_text(annotation: Any) -> str:
    """Returns a key's type in TOML's words: `integer`, `"a" | "b"`, `array of string`, ..."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return " | ".join(json.dumps(arg) for arg in args)
    if _is_union(annotation):
        return " or ".join("unset" if arg is type(None) else type_text(arg) for arg in args)
    if origin in (tuple, list) and (len(args) == 2 and args[1] is Ellipsis or origin is list):
        return f"array of {type_text(args[0])}"
    if origin is tuple:
        return "[" + ", ".join(type_text(arg) for arg in args) + "]"
    if origin is dict:
        return f"table of {type_text(args[0])} -> {type_text(args[1])}"
    if _table_of(annotation):
        return "table"
    names = {str: "string", int: "integer", float: "float", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def default_text(key: Key) -> str:
    """Returns a key's default as TOML writes it, "required", or "unset"."""
    if key.required:
        return "required"
    if key.default is None:
        return "unset"
    if _table_of(key.annotation):
        return "its table's defaults"
    if isinstance(key.default, tuple):
        return json.dumps(list(key.default))
    return json.dumps(key.default)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _summary(cls: type) -> str:
    """The first paragraph of a class docstring, without its `[section]:` label."""
    first = (inspect.getdoc(cls) or "").split("\n\n")[0]
    return _sentence(re.sub(r"^\[[\w.]+\]:\s*", "", " ".join(first.split())))


def _table(title: str, cls: type) -> list[str]:
    """Returns the markdown of one TOML table, then of the tables nested in it."""
    lines = [f"## [{title}]" if "." not in title else f"### [{title}]", "", _summary(cls), "",
             "| key | type | default | meaning |", "|---|---|---|---|"]
    nested = []
    for key in keys(cls):
        kind = type_text(key.annotation) + (f" ({key.bounds})" if key.bounds else "")
        table = _table_of(key.annotation)
        meaning = _sentence(key.meaning) + (f" See [{title}.{key.name}] below." if table else "")
        lines.append(f"| `{key.name}` | {_cell(kind)} | `{_cell(default_text(key))}` | "
                     f"{_cell(meaning)} |")
        if table:
            nested += [""] + _table(f"{title}.{key.name}", table)
    return lines + nested


def render() -> str:
    """Returns the whole reference: every section of a campaign config, then sweep files."""
    intro = inspect.getdoc(config_lib).split("\n\n", 1)[1]
    lines = ["# Configuration reference", "",
             f"Generated by `{COMMAND}` from the typed settings (`evo/config.py` and the",
             "classes it names); edit those, then run that command, never this file.", "",
             " ".join(intro.split()), "",
             "Sections: " + " · ".join(f"[`[{name}]`](#{name})" for name in config_lib.SECTIONS),
             ""]
    for name, section in config_lib.SECTIONS.items():
        lines += _table(name, section) + [""]
    sweep_format = ast.get_docstring(parse_source(SWEEP.read_text()))  # not imported: no pandas
    lines += ["## Sweep files (`evo sweep`)", "", sweep_format, ""]
    return "\n".join(lines)


def main() -> None:
    """Writes the reference to docs/config.md and says so."""
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT}")


if __name__ == "__main__":
    main()
