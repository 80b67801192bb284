"""The static gate: an AST policy every candidate passes before it is ever imported.

Generated kernels are untrusted, and a model under selection pressure learns to game the
harness. Most games need something no honest kernel module does: introspection (dunders,
getattr, frames), a module beyond torch/triton/math, torch internals (the dispatcher,
`torch.library`, streams), host reads of tensor values, torch math on the host, Python run
inside a launch (grid callables, hooks), or state that outlives a call (the way result caches
are built). This gate refuses those by reading the source: pure `ast`, nothing imported, a
few milliseconds per module, on the trusted side after the syntax check. It does not rely on
the in-process audits, which stay as a second layer that explains failures.

What a static reading cannot decide is left to the runtime layers: arithmetic on tensors the
inference cannot see (an unannotated helper parameter of an external candidate, an object
attribute), and `kernel[grid]` with a grid function passed in as a parameter.

This module walks the tree and judges functions, classes and state; the rules for names and
paths live in `policy_paths`, those for calls, operators and grids in `policy_expressions`,
the tables in `policy_rules`, and what is learnt before the walk in `policy_facts`.
"""

from __future__ import annotations

import ast
import dataclasses

from evo.records import parse_source
from fitness.judge import policy_facts as facts_lib
from fitness.judge import policy_rules as rules
from fitness.judge.policy_expressions import ExpressionRules
from fitness.judge.policy_facts import Scope, code, dunder, is_docstring
from fitness.judge.policy_paths import PathRules
from fitness.judge.policy_rules import Policy

_KERNEL_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Import,
                      ast.ImportFrom, ast.Global, ast.Nonlocal, ast.With, ast.Try, ast.Delete)
_CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


@dataclasses.dataclass(frozen=True)
class Violation:
    """One refused construct: where it is, which rule, and what to write instead."""

    line: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"line {self.line}: [{self.rule}] {self.detail}"


def rules_for(task) -> Policy:
    """Returns the policy of a task: built-in and test suites strict, external suites looser.

    A task's `torch_allowlist` (aten op names its runtime audit accepts) widens the host-side
    torch names and tensor methods the same way, so the two layers never disagree.
    """
    base = rules.BUILTIN if task.suite in ("builtin", "test") else rules.EXTERNAL
    extra = tuple(task.torch_allowlist)
    if not extra:
        return base
    return dataclasses.replace(base, torch_names=base.torch_names | {f"torch.{n}" for n in extra},
                               tensor_methods=base.tensor_methods | set(extra))


def check(source: str, task) -> Violation | None:
    """Returns the first violation in source order, None if the module passes the gate.

    `source` must parse (the syntax check runs first); a module nested too deeply to walk
    is refused rather than crashing the judge.
    """
    try:
        tree = parse_source(source)
        policy = rules_for(task)
        found = _Gate(policy, facts_lib.gather(tree, policy, task.entry_point)).run(tree)
    except (RecursionError, MemoryError):  # the parser reports deep nesting as MemoryError
        return Violation(1, "nesting", "the module nests too deeply to check; flatten its expressions")
    return min(found, default=(0, 0, None), key=lambda v: v[:2])[2]


class _Gate(PathRules, ExpressionRules):
    """Walks a module once, with the scope (module, host function, kernel) of every node."""

    def __init__(self, policy: Policy, facts: facts_lib.Facts):
        self.policy, self.facts = policy, facts
        self.found: list[tuple[int, int, Violation]] = []
        self.defs = dict(facts.defs)  # grows with inner functions, for `kernel[grid_fn]`

    def run(self, tree: ast.Module) -> list[tuple[int, int, Violation]]:
        self.visit(tree, Scope("module"))
        return self.found

    def flag(self, node: ast.AST, rule: str, detail: str) -> None:
        self.found.append((node.lineno, node.col_offset, Violation(node.lineno, rule, detail)))

    def visit(self, node: ast.AST, scope: Scope) -> None:
        if scope.kind == "kernel" and isinstance(node, _KERNEL_STATEMENTS):
            return self.flag(node, "kernel-body", f"`{code(node)}` is not allowed inside @triton.jit "
                             f"function `{scope.function}`; a kernel body is triton.language code only")
        handler = _HANDLERS.get(type(node))
        if handler:
            return handler(self, node, scope)
        for child in facts_lib.children(node):
            self.visit(child, scope)

    def tensor(self, node: ast.AST, scope: Scope) -> bool:
        return scope.kind == "host" and facts_lib.is_tensor(node, scope.tensors, self.facts.aliases)

    def visit_FunctionDef(self, node: ast.FunctionDef, scope: Scope, in_class: bool = False) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if facts_lib.path_of(target, self.facts.aliases) not in rules.DECORATORS:
                self.flag(decorator, "decorator", f"`@{code(decorator)}`: only @triton.jit, "
                          "@triton.autotune and @triton.heuristics may decorate (no caching wrappers)")
            self.visit(decorator, scope)
        if dunder(node.name) and not (in_class and node.name == "__init__"):
            self.flag(node, "dunder", f"`def {node.name}` defines a protocol hook; only __init__ may be "
                      "defined with a dunder name")
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            if isinstance(default, _CONTAINERS) or _is_call_to(default, ("dict", "list", "set")):
                self.flag(default, "global-state", f"`{code(default)}` is a mutable default, "
                          "which outlives the call")
        for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            if arg.annotation is not None:
                self.visit(arg.annotation, scope)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default, scope)
        if node.returns is not None:
            self.visit(node.returns, scope)
        self.defs.setdefault(node.name, node)
        if node.name in self.facts.grids:
            self.check_grid_function(node)
        params = node.args.posonlyargs + node.args.args
        inner = Scope("kernel" if node in self.facts.kernel_defs else "host",
                      self.facts.local.get(node, frozenset()),
                      scope.local | scope.outer if scope.kind == "host" else frozenset(),
                      frozenset(self.facts.tensors.get(node, ())),
                      params[0].arg if in_class and params else None,
                      in_class and node.name == "__init__", node.name)
        for statement in node.body:
            self.visit(statement, inner)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef, scope: Scope) -> None:
        for decorator in node.decorator_list:
            self.flag(decorator, "decorator", f"`@{code(decorator)}`: classes may not be decorated")
        for base in node.bases:
            allowed = (isinstance(base, ast.Name) and base.id in self.facts.classes) or \
                (facts_lib.path_of(base, self.facts.aliases) or getattr(base, "id", "")) in self.policy.class_bases
            if not allowed:
                self.flag(base, "class", f"`class {node.name}({code(base)})`: a class may subclass only "
                          f"{', '.join(sorted(self.policy.class_bases))} or a class of this module")
        for keyword in node.keywords:
            self.flag(keyword.value, "class", f"`{keyword.arg}=` in `class {node.name}` is not allowed")
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.visit_FunctionDef(statement, scope, in_class=True)
            elif not isinstance(statement, ast.Pass) and not is_docstring(statement):
                self.flag(statement, "class", f"`{code(statement)}`: a class body holds only methods "
                          "(class attributes outlive calls); set instance attributes in __init__")

    def visit_Global(self, node: ast.Global, scope: Scope) -> None:
        self.flag(node, "global-state", f"`{code(node)}` rebinds state that outlives the call; "
                  "keep state local to the call")

    visit_Nonlocal = visit_Global

    def visit_Assign(self, node: ast.Assign, scope: Scope) -> None:
        on_self = any(isinstance(t, ast.Attribute) and facts_lib.root_name(t) == scope.self_name
                      for t in node.targets)
        if on_self and isinstance(node.value, _CONTAINERS):
            self.flag(node.value, "global-state", f"`{code(node)}`: a container on the instance "
                      "outlives forward calls; keep state local to the call")
        for child in facts_lib.children(node):
            self.visit(child, scope)

    def visit_For(self, node: ast.For, scope: Scope) -> None:
        self.visit(node.target, scope)
        self.visit_Name(node.iter, scope, True) if isinstance(node.iter, ast.Name) else self.visit(node.iter, scope)
        for statement in node.body + node.orelse:
            self.visit(statement, scope)

    def visit_comprehension(self, node: ast.comprehension, scope: Scope) -> None:
        self.visit(node.target, scope)
        self.visit_Name(node.iter, scope, True) if isinstance(node.iter, ast.Name) else self.visit(node.iter, scope)
        for condition in node.ifs:
            self.visit(condition, scope)


_HANDLERS = {getattr(ast, name[6:]): method for cls in reversed(_Gate.__mro__) for name, method in vars(cls).items()
             if name.startswith("visit_") and hasattr(ast, name[6:])}


def _is_call_to(node: ast.AST, names: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
