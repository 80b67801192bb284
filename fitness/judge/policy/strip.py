"""Removing the code of a candidate module that never runs on import, before the gate and the load.

LLMs and tutorial authors append a `if __name__ == "__main__":` self-test, unused `test_*` or
`benchmark_*` functions, and the imports only those use (time, numpy, pytest). None of it
runs when the worker imports the module and calls the entry point, yet a gate that reads it
refuses honest modules for it. So the trusted side blanks it out: what the gate judges is
exactly what the worker loads (the candidate keeps the id of its original source).

Removed, at module level only: a `__main__` test block of the exact form
`if __name__ == "__main__":` with no else (kept when anything in the module binds
`__name__`, so a block that can run is judged), then every function or class that no kept
code, the entry point or the task's harness reaches, then imports nothing kept uses (of a
package nothing kept uses either: a submodule import is an attribute of its package). Lines
are blanked, not deleted, so a violation's line number is the line in the original file.
"""

from __future__ import annotations

import ast
import functools
import re

from evo.records import parse_source

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def runnable_source(source: str, task) -> str:
    """Returns `source` with its never-run top-level code blanked; `source` itself when there is
    none, or when it does not parse (the syntax check reports that)."""
    call = task.entry_call or {}
    called = (imported_names(call["module"], tuple(call["modules"].values()))
              if call.get("kind") == "call_op" else frozenset())
    return strip(source, task.entry_point, task.harness or "", called)


@functools.lru_cache(maxsize=64)  # the gate, the load and the backend check each ask
def strip(source: str, entry_point: str, harness: str, called: frozenset = frozenset()) -> str:
    """`runnable_source` for a task's entry point, harness text and the names its timed call
    imports from the module (`called`)."""
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    removed = _never_run(tree.body, frozenset({entry_point}) | harness_names(harness) | called)
    if not removed:
        return source
    lines = _LINES.findall(source)
    for first, last in removed:
        for index in range(first - 1, min(last, len(lines))):
            lines[index] = lines[index][len(lines[index].rstrip("\r\n")):]
    return "".join(lines)


@functools.lru_cache(maxsize=64)
def imported_names(module: str, sources: tuple[str, ...]) -> frozenset[str]:
    """Returns the names code in `sources` takes from module `module`: `from module import a`,
    and `m.a` where `import module as m`. A suite's timed call (`Task.entry_call` "call_op":
    the performance file's `call_op`, the candidate in the module's place) may call more of
    the module than its entry point reaches: chunk_gated_attention's imports fwd_pre, the
    entry, and fwd_inner, and fwd_inner blanked as never run left it untimed (RESULTS.md §36)."""
    names = set()
    for source in sources:
        tree = parse_source(source)
        aliases = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for alias in node.names if alias.name == module}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == module:
                names |= {alias.name for alias in node.names}
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in aliases):
                names.add(node.attr)
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def harness_names(harness: str) -> frozenset[str]:
    """Returns the names a task's harness (appended to the candidate) may reach in the module:
    every name it reads and does not bind itself, and every identifier-like string (a lookup
    by name)."""
    if not harness:
        return frozenset()
    tree = parse_source(harness)
    own = {a.asname or a.name.split(".")[0] for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))
           for a in s.names} | {s.name for s in tree.body if isinstance(s, _DEFS)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - own
    return frozenset(read) | frozenset(
        n.value for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier())


@functools.lru_cache(maxsize=256)
def harness_imports(harness: str) -> tuple[ast.stmt, ...]:
    """Returns the harness's top-level import statements: names a module that leans on its
    harness (a reference that uses `torch` it never imports) reads from them."""
    if not harness:
        return ()
    return tuple(s for s in parse_source(harness).body if isinstance(s, (ast.Import, ast.ImportFrom)))


def _never_run(body: list[ast.stmt], roots: frozenset[str]) -> list[tuple[int, int]]:
    """Returns the (first, last) lines of the top-level statements that never run or are never used."""
    main_blocks = [] if _binds_dunder_name(body) else [s for s in body if _is_main_block(s)]
    kept = [s for s in body if s not in main_blocks]
    defs = {s.name: s for s in kept if isinstance(s, _DEFS)}
    used = set(roots)
    for statement in kept:
        if not isinstance(statement, (*_DEFS, ast.Import, ast.ImportFrom)):
            used |= _loaded(statement)
    frontier = [defs[name] for name in used if name in defs]
    reached = set()
    while frontier:
        node = frontier.pop()
        if node.name in reached:
            continue
        reached.add(node.name)
        names = _loaded(node)
        used |= names
        frontier.extend(defs[name] for name in names if name in defs and name not in reached)
    unused = [s for s in kept if isinstance(s, _DEFS) and s.name not in reached
              and sum(d.name == s.name for d in kept if isinstance(d, _DEFS)) == 1]
    imports = [s for s in kept if isinstance(s, (ast.Import, ast.ImportFrom))]
    live_roots = {_root(s) for s in imports if not _unused_import(s, used)}
    unused += [s for s in imports if _unused_import(s, used) and _root(s) not in live_roots | used]
    spans = {id(s): _span(s) for s in body}
    kept_lines = {line for s in body if s not in main_blocks and s not in unused
                  for line in range(spans[id(s)][0], spans[id(s)][1] + 1)}
    return [spans[id(s)] for s in main_blocks + unused
            if not any(line in kept_lines for line in range(spans[id(s)][0], spans[id(s)][1] + 1))]


def _span(node: ast.stmt) -> tuple[int, int]:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    return first, node.end_lineno or node.lineno


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _root(node: ast.Import | ast.ImportFrom) -> str:
    """The top package an import loads: importing `triton.language.extra.libdevice` makes
    `tl.extra.libdevice` reachable, so such an import stays while its package is in use."""
    return (node.module or "" if isinstance(node, ast.ImportFrom) else node.names[0].name).split(".")[0]


def _unused_import(node: ast.Import | ast.ImportFrom, used: set[str]) -> bool:
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return False
    bound = [a.asname or a.name.split(".")[0] for a in node.names]
    return "*" not in bound and not any(name in used for name in bound)


def _is_main_block(node: ast.stmt) -> bool:
    """True for `if __name__ == "__main__":` (either operand order) with no else branch."""
    if not isinstance(node, ast.If) or node.orelse or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    operands = [test.left, test.comparators[0]]
    return any(isinstance(o, ast.Name) and o.id == "__name__" for o in operands) and \
        any(isinstance(o, ast.Constant) and o.value == "__main__" for o in operands)


def _binds_dunder_name(body: list[ast.stmt]) -> bool:
    """True when anything in the module could rebind `__name__` (a store, a parameter, an
    import alias, a global statement...): then a `__main__` block may run, and is judged."""
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id == "__name__":
            return True
        names = (node.names if isinstance(node, (ast.Global, ast.Nonlocal)) else
                 [a.asname or a.name for a in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else
                 [getattr(node, f, None) for f in ("arg", "name", "rest")])
        if "__name__" in names:
            return True
    return False
