"""The tunable knobs of a kernel module, found through its syntax tree, and rewriting them.

A knob is a launch keyword at a `kernel[grid](...)` call site (`BLOCK_SIZE=1024`,
`num_warps=4`, `num_stages=2`; on ROCm also `waves_per_eu`, `matrix_instr_nonkdim`, `kpack`)
or an integer literal assigned outside kernels that is a block size by its name
(`BLOCK = 256`, `BT, BK = 64, 32`) or that a launch keyword passes on (`num_warps = 4` ...
`num_warps=num_warps`). Launch options a call leaves out are knobs too, at their backend
default, and setting one inserts it; a kernel the module never launches (the suite's test
code does, as in GEAK-eval's ROCm files) gets them through an inserted
`@triton.heuristics` line, which overrides what its caller passes.
Values are rewritten in the text at the literal's position (comments and layout survive);
sizes computed at run time (`triton.next_power_of_2(n)`) are not knobs.
An autotuned kernel is tuned through its configs (`operators.autotune`). A module's per-shape configuration table (see `operators.tables`) contributes one
knob per bucket and name, keyed `CONFIGS[bucket].NAME`, with the values the module's `KNOBS`
allows and kind "design" for the knobs its `DESIGN` names.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import re
from typing import Mapping

from evo.records import parse_source
from operators import autotune, tables

BLOCK_RANGE = (16, 8192)  # 1-D elements per program
DOT_TILE_RANGE = (16, 256)  # BLOCK_M/N/K of a kernel that calls tl.dot
TILE_RANGE = (1, 4096)  # one side of a 2-D tile without tl.dot
MAX_BLOCK_ELEMENTS = 1 << 16  # cap on the product of one launch's block sizes (registers)

_TILE = re.compile(r"^(BLOCK|TILE)(_SIZE)?_[MNK]$|^B[A-CE-Z]$")  # BLOCK_M; BT, BK, BV (BD: a head dim)
_SEMANTIC = re.compile(r"DMODEL|HEAD|_D$|_DIM$")  # head dims and the like: tied to the problem
INSERTED_KEYWORD = ", {name}={value}"
HEURISTIC_LINE = "@triton.heuristics({{'{name}': lambda args: {value}}})\n"
"""How an absent launch option is set on a kernel the module does not launch itself."""


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
      span: byte offsets (start, end) of the literal to replace ((at, at): an insertion).
      present: False if the keyword is absent and setting it inserts `, name=value`.
      linked: spans of grid literals equal to this block size, rewritten with it.
      launch: the key prefix of its launch ("" for constants no launch uses).
      insert: what setting an absent knob writes at `span`.
      elements: for a knob choosing which configs a list keeps (kind "configs"), the span of
        each config; value i keeps only the i-th, 0 keeps them all.
    """

    key: str
    kind: str
    value: int
    values: tuple[int, ...]
    span: tuple[int, int]
    present: bool = True
    linked: tuple[tuple[int, int], ...] = ()
    launch: str = ""
    insert: str = INSERTED_KEYWORD
    elements: tuple[tuple[int, int], ...] = ()

    @property
    def name(self) -> str:
        return self.key.rsplit(".", 1)[1].split("#")[0]

    def edits(self, value: int) -> list[tuple[tuple[int, int], str]]:
        """Returns the (span, text) replacements that set this knob to `value`."""
        if self.elements:  # cut what precedes the kept config and what follows it, up to the last
            kept = self.elements[value - 1] if value else None
            cuts = [(self.elements[0][0], kept[0]), (kept[1], self.elements[-1][1])] if kept else []
            return [(cut, "") for cut in cuts if cut[0] < cut[1]]
        if self.present:
            return [(span, str(value)) for span in (self.span, *self.linked)]
        return [(self.span, self.insert.format(name=self.name, value=value))] if value != self.value else []


def find(source: str, backend: str) -> list[Knob]:
    """Returns the knobs of `source` in source order; raises SyntaxError if it does not parse."""
    tree = parse_source(source)
    offsets = _line_offsets(source)
    uses_dot = "tl.dot" in source or ".dot(" in source
    jitted, autotuned = _kernels(tree)
    scoped = list(_walk_scoped(tree))
    launches = [(node, function) for _, node, function in scoped if _is_launch(node, jitted)]
    fed = _fed_names(launches, scoped, autotuned)
    knobs: list[Knob] = []
    seen: dict[str, int] = {}

    def add(knob: Knob) -> None:
        seen[knob.key] = seen.get(knob.key, 0) + 1
        if seen[knob.key] > 1:
            knob = dataclasses.replace(knob, key=f"{knob.key}#{seen[knob.key]}")
        knobs.append(knob)

    for scope, node, function in scoped:
        if _is_launch(node, jitted) and node.func.value.id not in autotuned:
            for knob in _launch_knobs(node, function, offsets, backend, uses_dot):
                add(knob)
        elif isinstance(node, ast.Assign) and scope not in jitted:
            for name, literal in _literal_targets(node):
                kernel, keyword = fed.get((scope, name), ("", name))
                knob = _size_or_option(f"{scope}.{name}", keyword, literal, offsets, backend, uses_dot)
                if knob is None and keyword != name:
                    knob = _size_or_option(f"{scope}.{name}", name, literal, offsets, backend, uses_dot)
                if knob is not None:
                    add(dataclasses.replace(knob, launch=kernel))
    for knob in _config_knobs(tree, scoped, offsets, backend, uses_dot):
        add(knob)
    for knob in _unlaunched_knobs(tree, jitted - autotuned, offsets, backend, uses_dot):
        add(knob)
    for entry in tables.entries(tree):
        add(_table_knob(entry, offsets, backend, uses_dot))
    return knobs


def _is_launch(node: ast.AST, jitted: set[str]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) \
        and isinstance(node.func.value, ast.Name) and node.func.value.id in jitted


def _literal_targets(node: ast.Assign):
    """Yields (name, integer literal) of `NAME = 64` and `BT, BK = 64, 32` assignments."""
    if len(node.targets) != 1:
        return
    target, value = node.targets[0], node.value
    pairs = zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
        and len(target.elts) == len(value.elts) else [(target, value)]
    for name, literal in pairs:
        if isinstance(name, ast.Name) and tables.is_int_literal(literal):
            yield name.id, literal


def _fed_names(launches, scoped, autotuned: set[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """Returns (scope, name) -> (kernel, keyword) for each name a launch keyword passes on
    (`BT=BT`, `num_warps=nw`) that its scope only ever assigns literals (a name also computed,
    as a flattened shape's `block_m = 1`, is logic, not a knob): the scope is the launching
    function's if it assigns the name, else the module's. Launches of autotuned kernels are
    left out: their configs own the knobs."""
    stores, literals = collections.Counter(), collections.Counter()
    for scope, node, _ in scoped:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[scope, node.id] += 1
        elif isinstance(node, ast.Assign):
            literals.update((scope, name) for name, _ in _literal_targets(node))
    fed = {}
    for call, function in launches:
        if call.func.value.id in autotuned:
            continue
        scope = function.name if function else "<module>"
        for kw in call.keywords:
            if kw.arg is not None and isinstance(kw.value, ast.Name):
                where = scope if stores[scope, kw.value.id] else "<module>"
                if literals[where, kw.value.id] and literals[where, kw.value.id] == stores[where, kw.value.id]:
                    fed.setdefault((where, kw.value.id), (call.func.value.id, kw.arg))
    return fed


def _size_or_option(key: str, name: str, literal: ast.Constant, offsets, backend: str, uses_dot: bool,
                    launch: str = "") -> Knob | None:
    """Returns the knob of `literal` given to `name`, a launch option or a block size; else None."""
    options = launch_options(backend, uses_dot)
    if name in options:
        kind, values = name, options[name][0]
    else:
        kind = _size_kind(name, literal)
        if not kind:
            return None
        values = _size_values(kind, literal.value, uses_dot)
    return Knob(key, kind, literal.value, tuple(sorted(set(values) | {literal.value})), _span(literal, offsets),
                launch=launch)


def _config_knobs(tree: ast.Module, scoped, offsets, backend: str, uses_dot: bool) -> list[Knob]:
    """Returns the knobs of the module's autotune configs: each one's values (its absent
    `num_warps`/`num_stages` inserted at their default), and which configs each list keeps."""
    pairs = [(scope, node) for scope, node, _ in scoped]
    options = launch_options(backend, uses_dot)
    found = []
    for config in autotune.configs(tree, pairs):
        launch = f"{config.scope}.configs[{config.index}]"
        for name, literal in config.values:
            knob = _size_or_option(f"{launch}.{name}", name, literal, offsets, backend, uses_dot, launch)
            if knob is not None:
                found.append(knob)
        if config.end is not None:
            at = offsets[config.end[0] - 1] + config.end[1]
            found += [Knob(f"{launch}.{name}", name, options[name][1], options[name][0], (at, at),
                           present=False, launch=launch) for name in config.absent]
    for listed in autotune.lists(tree, pairs):
        spans = tuple(_span(element, offsets) for element in listed.elements)
        found.append(Knob(f"{listed.scope}.configs", "configs", 0, tuple(range(len(spans) + 1)),
                          (spans[0][0], spans[-1][1]), elements=spans))
    return found


def _unlaunched_knobs(tree: ast.Module, kernels: set[str], offsets, backend: str,
                      uses_dot: bool) -> list[Knob]:
    """Returns the launch options of each kernel the module never names (neither launches it
    nor calls it from another kernel nor passes it on: its caller is outside, as the test
    code of GEAK-eval's ROCm files), set by a `@triton.heuristics` line above its `@triton.jit`."""
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in kernels or node.name in used:
            continue
        jit = [d for d in node.decorator_list if _decorator_name(d) == "jit"]
        target = jit[0].func if jit and isinstance(jit[0], ast.Call) else jit[0] if jit else None
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "triton"):
            continue  # `triton` may not be bound for the inserted line
        at = offsets[jit[0].lineno - 1]
        found += [Knob(f"{node.name}.{option}", option, default, values, (at, at), present=False,
                       launch=node.name, insert=HEURISTIC_LINE)
                  for option, (values, default) in launch_options(backend, uses_dot).items()]
    return found


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
    """Returns `source` with each knob named in `settings` set to its value. A config a
    "configs" knob removes takes the edits of its own values with it."""
    by_key = {k.key: k for k in knobs}
    unknown = sorted(set(settings) - set(by_key))
    if unknown:
        raise KeyError(f"unknown knob(s) {unknown}; this source has {sorted(by_key)}")
    edits = [(*span, order, text) for order, (key, value) in enumerate(settings.items())
             for span, text in by_key[key].edits(value)]  # (start, end, order, text)
    removed = [(start, end) for start, end, _, text in edits if not text]
    edits = [edit for edit in edits if (edit[0], edit[1]) in removed
             or not any(start <= edit[0] and edit[1] <= end for start, end in removed)]
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
    """Yields (scope name, node, innermost enclosing function or None) for every node, in
    source order; a function's scope is its own (a method's too: `forward.BT`)."""
    def visit(parent, function):
        for node in ast.iter_child_nodes(parent):
            inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            yield (inner.name if inner else "<module>"), node, inner
            yield from visit(node, inner)

    yield from visit(tree, None)


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
