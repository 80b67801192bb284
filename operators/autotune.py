"""The `triton.Config` entries of a module's autotune lists, read through its syntax tree.

An autotuned kernel times every config of its list on the first call of each key and keeps
the fastest, so launch keywords at its call sites are not where it is tuned: its configs
are. Two kinds of knob come from them (`operators.knobs` builds them):

- a value of one config: an integer literal of its meta-parameter dict or its `num_warps=`
  / `num_stages=` keyword (absent ones inserted); moving one changes what it can pick.
- which configs are kept, for a list literal of two or more configs: keeping one pins the
  kernel to it (a one-config autotune does not benchmark), so what is timed is exactly that
  config, and its values can then be tuned one by one.

Configs are found wherever a list is written (the decorator, or a function returning one,
as GEAK-eval's ROCm `get_autotune_config()`); a comprehension gives no knob.
"""

from __future__ import annotations

import ast
import dataclasses

from operators import tables

CONFIG_KEYWORDS = ("num_warps", "num_stages")
"""The launch options a `triton.Config` takes as keywords (the rest go in its dict)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """One `triton.Config(...)` call with literal values.

    Attributes:
      scope: the autotuned kernel, or the function (or "<module>") that writes the list.
      index: its position among the configs of `scope`, in source order.
      values: (name, integer literal) of its dict entries and keywords.
      absent: the CONFIG_KEYWORDS it leaves out.
      end: (line, column) just after its last argument, where an absent keyword goes;
        None when it has `**kwargs` (an inserted keyword could repeat one).
    """

    scope: str
    index: int
    values: tuple[tuple[str, ast.Constant], ...]
    absent: tuple[str, ...]
    end: tuple[int, int] | None


@dataclasses.dataclass(frozen=True)
class ConfigList:
    """A list literal of two or more configs: `elements` are their nodes, in order."""

    scope: str
    elements: tuple[ast.Call, ...]


def configs(tree: ast.Module, scopes) -> list[Config]:
    """Returns every config of the module in source order. `scopes` yields (scope name, node)."""
    found, counts = [], {}
    for scope, node in scopes:
        if not _is_config(node):
            continue
        scope = _decorated(tree, node) or scope
        counts[scope] = counts.get(scope, -1) + 1
        values = list(_dict_values(node))
        given = {kw.arg for kw in node.keywords}
        values += [(kw.arg, kw.value) for kw in node.keywords
                   if kw.arg in CONFIG_KEYWORDS and tables.is_int_literal(kw.value)]
        last = (node.args + node.keywords)[-1] if node.args or node.keywords else None
        end = None if None in given or last is None else (last.end_lineno, last.end_col_offset)
        found.append(Config(scope, counts[scope], tuple(values),
                            tuple(k for k in CONFIG_KEYWORDS if k not in given), end))
    return found


def lists(tree: ast.Module, scopes) -> list[ConfigList]:
    """Returns the list literals of two or more configs (nothing else in them), in source order."""
    return [ConfigList(_decorated(tree, node) or scope, tuple(node.elts)) for scope, node in scopes
            if isinstance(node, ast.List) and len(node.elts) >= 2 and all(map(_is_config, node.elts))]


def _is_config(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "Config") or \
        (isinstance(func, ast.Name) and func.id == "Config")


def _dict_values(call: ast.Call):
    """Yields (name, literal) of the config's meta-parameter dict (first argument or kwargs=)."""
    given = call.args[:1] + [kw.value for kw in call.keywords if kw.arg == "kwargs"]
    for mapping in given:
        if isinstance(mapping, ast.Dict):
            for key, value in zip(mapping.keys, mapping.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and tables.is_int_literal(value):
                    yield key.value, value


def _decorated(tree: ast.Module, node: ast.AST) -> str:
    """Returns the name of the kernel whose `@triton.autotune(...)` holds `node`, else ""."""
    for top in tree.body:
        if isinstance(top, ast.FunctionDef):
            for decorator in top.decorator_list:
                if any(inner is node for inner in ast.walk(decorator)):
                    return top.name
    return ""
