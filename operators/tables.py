"""A kernel module's per-shape configuration table: what it declares, read through its syntax tree.

A module may carry three module-level tables of constants (the gate accepts them, read-only):

    KNOBS = {"BLOCK_M": (1, 2, 4, 8), "LOOP": (0, 1), "num_warps": (2, 4, 8), ...}
    DESIGN = ("LOOP",)
    CONFIGS = {"short": (("BLOCK_M", 8), ("LOOP", 0), ("num_warps", 4)),
               "long": (("BLOCK_M", 1), ("LOOP", 1), ("num_warps", 8))}

`KNOBS` lists every value each knob may take (all correct on every shape: the module promises
it, tests check it); `DESIGN` names the knobs that switch the algorithm rather than tune it;
`CONFIGS` maps a shape bucket (the launcher's own function of the input sizes picks one) to
one setting of every knob, as tuples of pairs because the gate only accepts immutable tables.
Each (bucket, knob) value is one `knobs.Knob` keyed `CONFIGS[bucket].NAME`.
"""

from __future__ import annotations

import ast
import dataclasses

from evo.records import parse_source

TABLE = "CONFIGS"
VALUES = "KNOBS"
DESIGN = "DESIGN"
BUCKET_FUNCTION = "_bucket"
"""The launcher's function from input sizes to a bucket name, by convention (listed, not run)."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One knob value in one bucket of the table.

    Attributes:
      bucket: the shape bucket ("short", "k_heavy", ...).
      name: the knob ("BLOCK_M", "num_warps", "SPLIT_K", ...).
      value: its current value.
      values: the values `KNOBS` allows (empty if the module does not say).
      design: True if `DESIGN` names it (switching it changes the algorithm).
      node: the integer literal holding the value (for its position in the text).
    """

    bucket: str
    name: str
    value: int
    values: tuple[int, ...]
    design: bool
    node: ast.Constant

    @property
    def key(self) -> str:
        return f"{TABLE}[{self.bucket}].{self.name}"

    @property
    def launch(self) -> str:
        return f"{TABLE}[{self.bucket}]"


def entries(tree: ast.Module) -> list[Entry]:
    """Returns every (bucket, knob) value of the module's table in source order; [] without one."""
    tables = _module_tables(tree)
    table = tables.get(TABLE)
    if not isinstance(table, ast.Dict):
        return []
    allowed = _allowed_values(tables.get(VALUES))
    design = _names(tables.get(DESIGN))
    found = []
    for bucket, pairs in zip(table.keys, table.values):
        if not (isinstance(bucket, ast.Constant) and isinstance(bucket.value, str) and isinstance(pairs, ast.Tuple)):
            continue
        for pair in pairs.elts:
            if isinstance(pair, ast.Tuple) and len(pair.elts) == 2 and _str(pair.elts[0]) \
                    and is_int_literal(pair.elts[1]):
                name, literal = pair.elts[0].value, pair.elts[1]
                found.append(Entry(bucket.value, name, literal.value, allowed.get(name, ()), name in design, literal))
    return found


def space(source: str) -> dict:
    """Returns the JSON-ready knob space a module declares: buckets, knob values, design knobs.

    {"buckets": {bucket: {knob: value}}, "knobs": {knob: [values]}, "design": [knobs],
    "bucket_rule": the return expressions of the module's `_bucket` function, as text};
    empty fields for a module without a table.
    """
    tree = parse_source(source)
    tables = _module_tables(tree)
    buckets: dict[str, dict[str, int]] = {}
    for entry in entries(tree):
        buckets.setdefault(entry.bucket, {})[entry.name] = entry.value
    return {"buckets": buckets,
            "knobs": {k: list(v) for k, v in _allowed_values(tables.get(VALUES)).items()},
            "design": sorted(_names(tables.get(DESIGN))),
            "bucket_rule": _bucket_rule(source, tree) if buckets else ""}


def _bucket_rule(source: str, tree: ast.Module) -> str:
    """Returns `_bucket`'s signature and body on one line, its docstring left out."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == BUCKET_FUNCTION:
            body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            text = "; ".join(" ".join(ast.get_source_segment(source, n).split()) for n in body)
            return f"{node.name}({', '.join(a.arg for a in node.args.args)}): {text}"
    return ""


def _module_tables(tree: ast.Module) -> dict[str, ast.AST]:
    """Returns {name: value} of the module-level single-name assignments (the last one wins)."""
    tables = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tables[node.targets[0].id] = node.value
    return tables


def _allowed_values(node: ast.AST | None) -> dict[str, tuple[int, ...]]:
    if not isinstance(node, ast.Dict):
        return {}
    allowed = {}
    for key, value in zip(node.keys, node.values):
        if _str(key) and isinstance(value, ast.Tuple) and value.elts \
                and all(is_int_literal(e) for e in value.elts):
            allowed[key.value] = tuple(sorted({e.value for e in value.elts}))
    return allowed


def _names(node: ast.AST | None) -> set[str]:
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set()
    return {e.value for e in node.elts if _str(e)}


def _str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def is_int_literal(node: ast.AST) -> bool:
    """Returns True for an integer literal (not a bool, which is an int to Python)."""
    return isinstance(node, ast.Constant) and type(node.value) is int
