"""The tunable knobs of a kernel module, found through its syntax tree, and rewriting them.

A knob is a launch keyword at a `kernel[grid](...)` call site (`BLOCK_SIZE=1024`,
`num_warps=4`, `num_stages=2`; on ROCm also `waves_per_eu`, `matrix_instr_nonkdim`, `kpack`)
or an UPPER_CASE block-size constant assigned in the wrapper (`BLOCK = 256`). Launch options
a call leaves out are knobs too, at their backend default, and setting one inserts it.
Values are rewritten in the text at the literal's position, so comments and layout survive.
Sizes computed at run time (`triton.next_power_of_2(n)`) are not knobs: they are left alone.
Autotuned kernels are left alone: their configs own those parameters.
A module's per-shape configuration table (see `operators.tables`) contributes one knob per
bucket and name, keyed `CONFIGS[bucket].NAME`, with the values the module's `KNOBS` allows
and kind "design" for the knobs its `DESIGN` names.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Mapping

from operators import tables

BLOCK_RANGE = (16, 8192)  # 1-D elements per program
DOT_TILE_RANGE = (16, 256)  # BLOCK_M/N/K of a kernel that calls tl.dot
TILE_RANGE = (1, 4096)  # one side of a 2-D tile without tl.dot
MAX_BLOCK_ELEMENTS = 1 << 16  # cap on the product of one launch's block sizes (registers)

_TILE = re.compile(r"^(BLOCK|TILE)(_SIZE)?_[MNK]$")
_SEMANTIC = re.compile(r"DMODEL|HEAD|_D$|_DIM$")  # head dims and the like: tied to the problem


def launch_options(backend: str, uses_dot: bool) -> dict[str, tuple[tuple[int, ...], int]]:
    """Returns {launch option: (values it may take, its default)} on `backend`."""
    options = {"num_warps": ((1, 2, 4, 8, 16), 4)}
    if backend == "rocm":
        options["num_stages"] = ((1, 2, 3), 2)
        options["waves_per_eu"] = ((0, 1, 2, 3, 4), 0)
        if uses_dot:
            options["matrix_instr_nonkdim"] = ((0, 16, 32), 0)
            options["kpack"] = ((1, 2), 1)
    else:
        options["num_stages"] = ((1, 2, 3, 4, 5), 3)
    return options


@dataclasses.dataclass(frozen=True)
class Knob:
    """One tunable value of a source.

    Attributes:
      key: unique name within the source: "<kernel>.<NAME>" for launch keywords,
        "<function or module>.<NAME>" for assigned constants.
      kind: "block" | "tile" | "group" | a launch option name.
      value: the current value (the backend default when the keyword is absent).
      values: every value the knob may take, the current one included.
      span: byte offsets (start, end) of the literal to replace, or (at, at) where an
        absent keyword is inserted.
      present: False if the keyword is absent and setting it inserts `, name=value`.
      linked: spans of grid literals equal to this block size, rewritten with it so the
        grid keeps covering the data.
      launch: the key prefix of the launch it belongs to ("" for assigned constants).
    """

    key: str
    kind: str
    value: int
    values: tuple[int, ...]
    span: tuple[int, int]
    present: bool = True
    linked: tuple[tuple[int, int], ...] = ()
    launch: str = ""

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1].split("#")[0]


def find(source: str, backend: str) -> list[Knob]:
    """Returns the knobs of `source` in source order; raises SyntaxError if it does not parse."""
    tree = ast.parse(source)
    offsets = _line_offsets(source)
    uses_dot = "tl.dot" in source or ".dot(" in source
    jitted, autotuned = _kernels(tree)
    knobs: list[Knob] = []
    seen: dict[str, int] = {}

    def add(knob: Knob) -> None:
        seen[knob.key] = seen.get(knob.key, 0) + 1
        if seen[knob.key] > 1:
            knob = dataclasses.replace(knob, key=f"{knob.key}#{seen[knob.key]}")
        knobs.append(knob)

    for scope, node, function in _walk_scoped(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in jitted \
                and node.func.value.id not in autotuned:
            for knob in _launch_knobs(node, function, offsets, backend, uses_dot):
                add(knob)
        elif isinstance(node, ast.Assign) and scope not in jitted and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            kind = _size_kind(node.targets[0].id, node.value)
            if kind:
                value = node.value.value
                add(Knob(f"{scope}.{node.targets[0].id}", kind, value, _size_values(kind, value, uses_dot),
                         _span(node.value, offsets)))
    for entry in tables.entries(tree):
        add(_table_knob(entry, offsets, backend, uses_dot))
    return knobs


def _table_knob(entry: tables.Entry, offsets, backend: str, uses_dot: bool) -> Knob:
    """Returns the knob of one table entry: its declared values, or the defaults for its kind."""
    options = launch_options(backend, uses_dot)
    if entry.design:
        kind = "design"
    elif entry.name in options:
        kind = entry.name
    else:
        kind = _size_kind(entry.name, entry.node) or "table"
    values = entry.values
    if not values:
        values = options[entry.name][0] if entry.name in options else \
            _size_values(kind, entry.value, uses_dot) if kind in ("block", "tile", "group") else ()
    return Knob(entry.key, kind, entry.value, tuple(sorted(set(values) | {entry.value})),
                _span(entry.node, offsets), launch=entry.launch)


def apply(source: str, knobs: list[Knob], settings: Mapping[str, int]) -> str:
    """Returns `source` with each knob named in `settings` set to its value."""
    by_key = {k.key: k for k in knobs}
    unknown = sorted(set(settings) - set(by_key))
    if unknown:
        raise KeyError(f"unknown knob(s) {unknown}; this source has {sorted(by_key)}")
    edits = []  # (start, end, order, text)
    for order, (key, value) in enumerate(settings.items()):
        knob = by_key[key]
        if knob.present:
            edits.append((*knob.span, order, str(value)))
            edits.extend((*span, order, str(value)) for span in knob.linked)
        elif value != knob.value:
            edits.append((*knob.span, order, f", {knob.name}={value}"))
    data = source.encode()
    for start, end, _, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode() + data[end:]
    return data.decode()


def _launch_knobs(call: ast.Call, function: ast.AST | None, offsets, backend: str, uses_dot: bool) -> list[Knob]:
    kernel = call.func.value.id
    options = launch_options(backend, uses_dot)
    knobs = []
    given = {kw.arg for kw in call.keywords}
    for kw in call.keywords:
        if kw.arg is None:
            continue
        is_option = kw.arg in options and tables.is_int_literal(kw.value)
        kind = kw.arg if is_option else _size_kind(kw.arg, kw.value)
        if kind:
            value = kw.value.value
            values = options[kind][0] if is_option else _size_values(kind, value, uses_dot)
            knobs.append(Knob(f"{kernel}.{kw.arg}", kind, value, tuple(sorted(set(values) | {value})),
                              _span(kw.value, offsets), launch=kernel))
    knobs = [_link_grid(k, knobs, call, function, offsets) for k in knobs]
    if None in given:  # `**options`: an inserted keyword could repeat one of them
        return knobs
    last = max(call.args + call.keywords, key=lambda n: (n.end_lineno, n.end_col_offset), default=None)
    if last is not None:
        at = offsets[last.end_lineno - 1] + last.end_col_offset
        for option, (values, default) in options.items():
            if option not in given:
                knobs.append(Knob(f"{kernel}.{option}", option, default, values, (at, at), present=False,
                                  launch=kernel))
    return knobs


def _link_grid(knob: Knob, launch_knobs: list[Knob], call: ast.Call, function, offsets) -> Knob:
    """Returns `knob` with the grid literals equal to its value linked, when that is unambiguous."""
    if knob.kind not in ("block", "tile") or sum(k.value == knob.value for k in launch_knobs
                                                 if k.kind in ("block", "tile")) != 1:
        return knob
    grid = call.func.slice
    if isinstance(grid, ast.Name) and function is not None:
        assigned = [n.value for n in ast.walk(function) if isinstance(n, ast.Assign) and n.lineno < call.lineno
                    and any(isinstance(t, ast.Name) and t.id == grid.id for t in n.targets)]
        grid = assigned[-1] if assigned else None
    if grid is None or isinstance(grid, ast.Lambda):
        return knob
    linked = tuple(_span(n, offsets) for n in ast.walk(grid)
                   if tables.is_int_literal(n) and n.value == knob.value)
    return dataclasses.replace(knob, linked=linked)


def _size_kind(name: str, value: ast.AST) -> str:
    """Returns "tile" | "block" | "group" for a power-of-two literal block-size name, else ""."""
    if not tables.is_int_literal(value) or value.value < 1 or value.value & (value.value - 1) \
            or _SEMANTIC.search(name):
        return ""
    if _TILE.match(name):
        return "tile"
    if name.isupper() and ("BLOCK" in name or "TILE" in name):
        return "block"
    if name.isupper() and name.startswith("GROUP"):
        return "group"
    return ""


def _size_values(kind: str, current: int, uses_dot: bool) -> tuple[int, ...]:
    low, high = {"block": BLOCK_RANGE, "group": (1, 16)}.get(kind, DOT_TILE_RANGE if uses_dot else TILE_RANGE)
    values = {1 << p for p in range(0, 15) if low <= 1 << p <= high}
    return tuple(sorted(values | {current}))


def _kernels(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Returns (names of @triton.jit functions, names of those also @triton.autotune'd)."""
    jitted, autotuned = set(), set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names = {_decorator_name(d) for d in node.decorator_list}
            if "jit" in names:
                jitted.add(node.name)
            if "autotune" in names:
                autotuned.add(node.name)
    return jitted, autotuned


def _decorator_name(decorator: ast.AST) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _walk_scoped(tree: ast.Module):
    """Yields (scope name, node, enclosing top-level function or None) for every node."""
    for top in tree.body:
        function = top if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        scope = function.name if function else "<module>"
        for node in ast.walk(top):
            yield scope, node, function


def _line_offsets(source: str) -> list[int]:
    """Returns the byte offset at which each line starts (ast columns are UTF-8 byte offsets)."""
    offsets, total = [], 0
    for line in source.encode().splitlines(keepends=True):
        offsets.append(total)
        total += len(line)
    offsets.append(total)
    return offsets


def _span(node: ast.AST, offsets: list[int]) -> tuple[int, int]:
    return offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset
