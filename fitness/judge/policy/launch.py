"""The lint's one positive rule: the entry point launches a Triton kernel.

A module whose entry point reaches no @triton.jit kernel is plain PyTorch or plain Python:
whatever it computes, it is not the Triton kernel the search breeds, and no later stage
needs to run to say so. "Reaches": the top-level definitions the entry point names, then
those they name, and so on (a class is reached whole); an external task's harness names
roots too, since it calls the module. A module that does not define the entry point is left
to the import stage, whose message names the functions it defines instead.
"""

from __future__ import annotations

import ast

from fitness.judge.policy.lint import path_of

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def detail(entry_point: str) -> str:
    return (f"`{entry_point}` launches no Triton kernel: nothing it reaches (its own code, the module's "
            f"functions and classes it names) is a @triton.jit function; do the work in a @triton.jit kernel "
            f"and launch it from `{entry_point}` as kernel[grid](...)")


def unlaunched(tree: ast.Module, roots: frozenset[str], entry_point: str, aliases: dict[str, str]) -> ast.AST | None:
    """Returns the entry point's definition when nothing reached from `roots` defines a kernel;
    None when something does, or when the module does not define the entry point."""
    bindings: dict[str, list[ast.stmt]] = {}
    for node in _top_level(tree.body):
        for name in _binds(node):
            bindings.setdefault(name, []).append(node)
    if entry_point not in bindings:
        return None
    reached, frontier = set(), [node for root in roots for node in bindings.get(root, ())]
    while frontier:
        node = frontier.pop()
        if node in reached:
            continue
        reached.add(node)
        if _defines_kernel(node, aliases):
            return None
        frontier += [b for n in ast.walk(node) if isinstance(n, ast.Name) for b in bindings.get(n.id, ())]
    return bindings[entry_point][0]


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Returns module-level statements, looking inside top-level if/try/with blocks."""
    found = []
    for node in body:
        found.append(node)
        for block in ("body", "orelse", "finalbody") if isinstance(node, (ast.If, ast.Try, ast.With)) else ():
            found += _top_level(getattr(node, block, []))
        for handler in getattr(node, "handlers", []):
            found += _top_level(handler.body)
    return found


def _binds(node: ast.stmt) -> list[str]:
    if isinstance(node, _DEFS):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _defines_kernel(node: ast.AST, aliases: dict[str, str]) -> bool:
    """True when `node` names `triton.jit` (a @triton.jit definition, a `triton.jit(fn)` call)."""
    return any(_is_jit(n, aliases) for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Name)))


def _is_jit(node: ast.AST, aliases: dict[str, str]) -> bool:
    path = path_of(node, aliases) or ""
    return path.startswith("triton") and path.endswith(".jit")
