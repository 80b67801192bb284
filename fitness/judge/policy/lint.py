"""The lint's breach rules: file, process or network I/O, and changes to process-wide settings.

One pass over every node of the module (no scopes, no inference: it is feedback, not a
boundary). Names resolve through the module's imports, and the harness's for names a module
uses without importing them, so `tl.store` reads as `triton.language.store`.
"""

from __future__ import annotations

import ast

from fitness.judge.policy import rules

Finding = tuple[ast.AST, str, str]
"""(node to blame, rule, detail): one breach."""

_NO_IO = ("a kernel module does no I/O: it takes everything from the entry point's arguments and "
          "returns its results (a self-test goes under `if __name__ == \"__main__\":`, which is removed "
          "before the check)")
_KEEP_SETTINGS = ("leave process-wide settings as the harness set them: pass options to the call "
                  "(`tl.dot(..., allow_tf32=...)`, `dtype=`), or use a `with` block that restores them "
                  "(torch.cuda.device(...), torch.no_grad())")


def code(node: ast.AST) -> str:
    """Returns the source of `node` on one line, cut to 60 characters, for a violation's detail."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def imported(tree: ast.Module, harness: tuple[ast.stmt, ...] = ()) -> dict[str, str]:
    """Returns name -> dotted path for every name an import binds anywhere in the module,
    the `harness` imports first (the module's own win)."""
    found = {}
    for node in [*harness, *ast.walk(tree)]:
        if isinstance(node, ast.Import):
            found.update((a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                         for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
    return found


def path_of(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Returns the dotted path of an imported name's attribute chain (`tl.store` ->
    `triton.language.store`), None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        return ".".join([aliases[node.id], *reversed(parts)])
    return None


def findings(tree: ast.Module, aliases: dict[str, str]) -> list[Finding]:
    """Returns every I/O and settings breach in the module, in no order."""
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | \
        {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))} | \
        {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [(node, "io", f"`{code(node)}` imports `{m}` (files, processes, environment or "
                       f"network); {_NO_IO}") for m in modules if _io_module(m)][:1]
        elif isinstance(node, ast.Call):
            found += _call(node, aliases, bound)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)):
            found += _stores(node, aliases)
    return found


def _io_module(name: str) -> bool:
    return name.split(".")[0] in rules.IO_MODULES


def _call(node: ast.Call, aliases: dict[str, str], bound: set[str]) -> list[Finding]:
    """Flags a call that does I/O (`open(...)`, `torch.save`, `__import__("os")`) or changes a
    setting (`torch.set_default_dtype`, `sys.path.insert`)."""
    func = node.func
    builtin = isinstance(func, ast.Name) and func.id not in aliases and func.id not in bound
    callee = func.id if builtin else path_of(func, aliases)
    if callee in rules.IO_CALLS:
        return [(node, "io", f"`{code(node)}` reads or writes a file; {_NO_IO}")]
    if callee in rules.IMPORT_CALLS and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) and _io_module(node.args[0].value):
        return [(node, "io", f"`{code(node)}` imports `{node.args[0].value}`; {_NO_IO}")]
    name = callee.rsplit(".", 1)[-1] if callee and "." in callee else ""
    receiver = path_of(func.value, aliases) if isinstance(func, ast.Attribute) else None
    if name in rules.SETTING_CALLS or name.startswith(rules.SETTING_PREFIX) or (
            receiver and "." in receiver and func.attr in rules.SETTING_METHODS):
        return [(node, "global-setting", f"`{code(node)}` changes a process-wide setting, which "
                 f"outlives the call; {_KEEP_SETTINGS}")]
    return []


def _stores(node: ast.AST, aliases: dict[str, str]) -> list[Finding]:
    """Flags an assignment into a library's state (`torch.backends.cudnn.benchmark = True`,
    `os.environ[k] = v`, `triton.knobs.x.y = z`, `time.perf_counter = f`)."""
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    found = []
    for target in (t for top in targets for t in ast.walk(top) if isinstance(t, (ast.Attribute, ast.Subscript))):
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name) and root.id in aliases and isinstance(target.ctx, (ast.Store, ast.Del)):
            found.append((target, "global-setting", f"`{code(node)}` changes `{code(target)}`, library state "
                          f"the whole process shares (it outlives the call); {_KEEP_SETTINGS}"))
    return found
