"""The static gate: an AST policy every candidate passes before it is ever imported.

Generated kernels are untrusted, and a model under selection pressure learns to game the
harness. Most games need what no honest kernel module does: introspection, modules beyond a
short list, torch internals, host reads of tensor values, torch math on the host, Python run
inside a launch (grid callables, hooks), or state that outlives a call. The gate refuses
those by reading the source (pure `ast`, nothing imported, milliseconds per module), after
blanking the code that never runs on import (`strip`). The rules are capabilities: no private
attribute of what the module did not define, no mutation of an object the call did not make,
no module object handed to a launch. TritonBench and ROCm tasks admit torch on the host, as
GEAK-eval's harness runs it; an external task also admits what its own reference does. What
the tensor inference cannot see is left to the runtime audits, the second layer.

Here: the walk, functions, classes and state; `paths` names and paths; `expressions` calls
and grids; `facts` what is learnt first; `rules` the tables (`contract` renders them).
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from evo.records import parse_source
from fitness.judge.policy import facts as facts_lib
from fitness.judge.policy import rules
from fitness.judge.policy.expressions import ExpressionRules
from fitness.judge.policy.facts import Scope, code, defaults, dunder, is_docstring, parameters
from fitness.judge.policy.paths import PathRules
from fitness.judge.policy.rules import Policy
from fitness.judge.policy.strip import harness_imports, runnable_source, strip

_KERNEL_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Import,
                      ast.ImportFrom, ast.Global, ast.Nonlocal, ast.With, ast.Try, ast.Delete)
_CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_DUNDER_METHODS = frozenset({"__init__", "__call__", "__post_init__"})
_METHOD_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})


@dataclasses.dataclass(frozen=True)
class Violation:
    """One refused construct: where it is, which rule, and what to write instead."""

    line: int
    rule: str
    detail: str
    key: str = dataclasses.field(default="", compare=False, repr=False)

    def __str__(self) -> str:
        return f"line {self.line}: [{self.rule}] {self.detail}"


def rules_for(task) -> Policy:
    """Returns the policy of a task: built-in and test suites strict, external suites looser.

    A task's `torch_allowlist` (aten op names its runtime audit accepts) widens the host-side
    torch names and tensor methods the same way, so the two layers never disagree. A task
    tagged "data-movement" (transpose, flip2d) refuses the views that reorder memory: there
    they would be the task's work. An external task also admits what its own reference does
    on the host (`reference_excuses`), and nothing more.
    """
    base = rules.BUILTIN if task.suite in ("builtin", "test") else \
        rules.HOST_COMPUTE if task.suite in rules.HOST_COMPUTE_SUITES else rules.EXTERNAL
    extra = tuple(task.torch_allowlist)
    if extra:
        base = dataclasses.replace(base, torch_names=base.torch_names | {f"torch.{n}" for n in extra},
                                   tensor_methods=base.tensor_methods | set(extra))
    if rules.DATA_MOVEMENT_TAG in task.tags:
        base = dataclasses.replace(base, tensor_methods=base.tensor_methods - rules.REORDERING_METHODS,
                                   tensor_attributes=base.tensor_attributes | rules.REORDERING_ATTRIBUTES)
    if base.name == "external" and task.baseline_source:
        excused = reference_excuses(base, task.baseline_source, task.entry_point, task.harness or "")
        base = dataclasses.replace(base, excused=excused)
    return base


def check(source: str, task) -> Violation | None:
    """Returns the first violation in source order, None if the module passes the gate.

    `source` must parse (the syntax check runs first); a module nested too deeply to walk
    is refused rather than crashing the judge. Code that never runs on import is blanked
    first (`strip`), so what is judged is what the worker loads.
    """
    try:
        gate = _judge(runnable_source(source, task), rules_for(task), task.entry_point, task.harness or "")
    except (RecursionError, MemoryError):  # the parser reports deep nesting as MemoryError
        return Violation(1, "nesting", "the module nests too deeply to check; flatten its expressions")
    return min(gate.found, default=(0, 0, None), key=lambda v: v[:2])[2]


@functools.lru_cache(maxsize=512)
def reference_excuses(policy: Policy, source: str, entry_point: str, harness: str) -> frozenset[tuple[str, str]]:
    """Returns the (rule, key) of every violation a task's own reference module (`source`)
    commits under `policy`: what an external task's candidates may do on the host besides it.

    A key names the thing used (a module, a dotted torch path, a tensor method, a decorator,
    a base class, a builtin), or else the offending code itself, so a candidate is excused
    only for what the reference does, never for a neighbouring construct. A reference with
    no Triton kernel (KernelBench's PyTorch model) excuses nothing: its torch is the task.
    """
    try:
        gate = _judge(strip(source, entry_point, harness), policy, entry_point, harness)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    if not gate.facts.kernel_defs:
        return frozenset()
    return frozenset((v.rule, v.key) for _, _, v in gate.found)


def _judge(source: str, policy: Policy, entry_point: str, harness: str) -> _Gate:
    """Returns the gate after one walk of `source`: its facts, and what it found."""
    tree = parse_source(source)
    gate = _Gate(policy, facts_lib.gather(tree, policy, entry_point, harness_imports(harness)), entry_point)
    gate.visit(tree, Scope("module"))
    return gate


class _Gate(PathRules, ExpressionRules):
    """Walks a module once, with the scope (module, host function, kernel) of every node."""

    def __init__(self, policy: Policy, facts: facts_lib.Facts, entry_point: str):
        self.policy, self.facts, self.entry_point = policy, facts, entry_point
        self.found: list[tuple[int, int, Violation]] = []
        self.defs = dict(facts.defs)  # grows with inner functions, for `kernel[grid_fn]`
        self._grids_checked: set[ast.AST] = set()
        self.entry_bindings: set[int] = set()  # `entry = value` targets, judged by check_entry_binding
        self.called: set[int] = set()  # the nodes called: `torch.f(...)`, not `g = torch.f`

    def flag(self, node: ast.AST, rule: str, detail: str, key: str | None = None) -> None:
        """Records a violation at `node`, unless the task's reference commits the same one
        (`key`: what is used, by default the code itself)."""
        key = code(node) if key is None else key
        if (rule, key) not in self.policy.excused:
            self.found.append((node.lineno, node.col_offset, Violation(node.lineno, rule, detail, key)))

    def visit(self, node: ast.AST, scope: Scope) -> None:
        if scope.kind == "kernel" and isinstance(node, _KERNEL_STATEMENTS):
            return self.flag(node, "kernel-body", f"`{code(node)}` is not allowed inside @triton.jit "
                             f"function `{scope.node.name}`; a kernel body is triton.language code only")
        handler = _HANDLERS.get(type(node))
        if handler:
            return handler(self, node, scope)
        for child in facts_lib.children(node):
            self.visit(child, scope)

    def tensor(self, node: ast.AST, scope: Scope) -> bool:
        return scope.kind == "host" and facts_lib.is_tensor(node, scope.tensors, self.facts)

    def visit_FunctionDef(self, node: ast.FunctionDef, scope: Scope, owner: ast.ClassDef | None = None) -> None:
        self.check_decorators(node, scope, owner)
        if dunder(node.name) and not (owner and node.name in _DUNDER_METHODS):
            self.flag(node, "dunder", f"`def {node.name}` defines a protocol hook; only __init__ and "
                      "__call__ may be defined with a dunder name, in a class", node.name)
        self.check_rebinding(node, node.name, scope)
        args = node.args
        for arg in parameters(args) + [a for a in (args.vararg, args.kwarg) if a]:
            self.check_rebinding(arg, arg.arg, scope)
            if arg.annotation is not None:
                self.visit(arg.annotation, scope)
        for default in defaults(args):
            if isinstance(default, ast.Name) and default.id in self.facts.kernels:
                self.flag(default, "launch-hook", f"`{code(default)}` as a default argument hands the call a "
                          "kernel object it could change (hooks, caches); launch it by name")
            elif not facts_lib.frozen(default, self.facts):
                self.flag(default, "global-state", f"`{code(default)}` as a default argument is created "
                          "once and outlives every call; default to None or a constant and build it inside")
            self.visit(default, scope)
        if node.returns is not None:
            self.visit(node.returns, scope)
        self.defs.setdefault(node.name, node)
        if node.name in self.facts.grids:
            self.check_grid_function(node)
        kernel = node in self.facts.kernel_defs
        positional = args.posonlyargs + args.args
        first = positional[0].arg if owner and positional else None
        ctx = first if owner and owner.name in self.facts.autograd_classes else None
        names = frozenset(a.arg for a in parameters(args))
        local = self.facts.local.get(node, names if kernel else frozenset())
        closed = scope.tensors - local if scope.kind == "host" else frozenset()  # a closure's tensors
        inner = Scope("kernel" if kernel else "host", local,
                      scope.local | scope.outer if scope.kind == "host" else frozenset(),
                      frozenset(self.facts.tensors.get(node, ())) | closed,
                      None if ctx else first, owner is not None and node.name == "__init__", ctx, node)
        for statement in node.body:
            self.visit(statement, inner)

    visit_AsyncFunctionDef = visit_FunctionDef

    def check_decorators(self, node: ast.AST, scope: Scope, owner: ast.ClassDef | None) -> None:
        """Flags a decorator that may change what a call returns (a cache, a wrapper of ours)."""
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            path = facts_lib.path_of(target, self.facts.aliases)
            if path is None and owner is not None and isinstance(target, ast.Name) \
                    and target.id in _METHOD_DECORATORS and target.id not in self.facts.module_kinds:
                path = target.id
            if path is None and isinstance(decorator, ast.Name) and _plain_wrapper(self.facts.defs.get(decorator.id)):
                continue  # a decorator of this module that returns its own inner function, judged as one
            if path not in rules.DECORATORS or (path in _METHOD_DECORATORS and owner is None):
                self.flag(decorator, "decorator", f"`@{code(decorator)}` may change what a call returns; "
                          "decorate with @triton.jit, @triton.autotune, @triton.heuristics, "
                          "@torch.no_grad(), @torch.inference_mode() or @staticmethod only (no caches)",
                          path or code(decorator))
            if path not in _METHOD_DECORATORS:
                self.visit(decorator, scope)

    def visit_ClassDef(self, node: ast.ClassDef, scope: Scope) -> None:
        self.check_decorators(node, scope, None)
        self.check_rebinding(node, node.name, scope)
        for base in node.bases:
            path = facts_lib.path_of(base, self.facts.aliases) or getattr(base, "id", "")
            allowed = (isinstance(base, ast.Name) and base.id in self.facts.classes) or \
                path in self.policy.class_bases
            if not allowed:
                self.flag(base, "class", f"`class {node.name}({code(base)})`: a class may subclass only "
                          f"{', '.join(sorted(self.policy.class_bases))} or a class of this module", path or code(base))
        for keyword in node.keywords:
            self.flag(keyword.value, "class", f"`{keyword.arg}=` in `class {node.name}` is not allowed")
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.visit_FunctionDef(statement, scope, owner=node)
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and self.constant_field(statement):
                continue
            elif not isinstance(statement, ast.Pass) and not is_docstring(statement):
                self.flag(statement, "class", f"`{code(statement)}`: a class body holds methods and "
                          "constant fields only (a container or object there outlives calls); set "
                          "instance attributes in __init__")

    def constant_field(self, node: ast.Assign | ast.AnnAssign) -> bool:
        """True for `BLOCK: int = 128`, `A = (1, 2)`, `w: torch.Tensor`, `n: int = field(default=1)`."""
        value = node.value
        is_field = isinstance(value, ast.Call) and \
            facts_lib.path_of(value.func, self.facts.aliases) == "dataclasses.field" and \
            all(k.arg in ("default", "default_factory", "init", "repr", "compare") for k in value.keywords) and \
            all(facts_lib.frozen(k.value, self.facts) or getattr(k.value, "id", "") in ("list", "dict")
                for k in value.keywords) and not value.args
        return all(isinstance(t, ast.Name) and not dunder(t.id) for t in facts_lib.targets(node)) and (
            value is None or is_field or facts_lib.frozen(value, self.facts))

    def check_rebinding(self, node: ast.AST, name: str, scope: Scope) -> None:
        """Flags binding an imported name to anything else (`torch = ...`, `def tl(...)`)."""
        if name in self.facts.aliases:
            self.flag(node, "rebind", f"`{name}` is an imported name ({self.facts.aliases[name]}); "
                      "rebinding it hides what the code uses: give the new value a name of its own", name)

    def visit_Global(self, node: ast.Global, scope: Scope) -> None:
        self.flag(node, "global-state", f"`{code(node)}` rebinds state that outlives the call; "
                  "keep state local to the call")

    visit_Nonlocal = visit_Global

    def visit_Assign(self, node: ast.Assign, scope: Scope) -> None:
        entry = [t for t in node.targets if isinstance(t, ast.Name) and t.id == self.entry_point]
        if scope.kind == "module" and entry:
            self.entry_bindings.update(map(id, entry))
            self.check_entry_binding(node.value)
        on_self = any(isinstance(t, ast.Attribute) and facts_lib.root_name(t) == scope.self_name
                      for t in node.targets)
        if on_self and isinstance(node.value, _CONTAINERS):
            self.flag(node.value, "global-state", f"`{code(node)}`: a container on the instance "
                      "outlives forward calls; keep state local to the call")
        for child in facts_lib.children(node):
            self.visit(child, scope)

    def check_entry_binding(self, value: ast.AST) -> None:
        """Flags an entry point made at import by a call (a factory's closure, an instance):
        state the call could keep. `entry = _Fn.apply` of an autograd.Function, another
        function of the module, or triton.jit(fn) are fine."""
        if isinstance(value, ast.Name) and self.facts.module_kinds.get(value.id) == "def":
            return
        if isinstance(value, ast.Attribute) and value.attr == "apply" and \
                getattr(value.value, "id", None) in self.facts.autograd_classes:
            return
        if isinstance(value, ast.Call) and facts_lib.path_of(value.func, self.facts.aliases) == "triton.jit":
            return
        self.flag(value, "entry-point", f"`{self.entry_point} = {code(value)}` makes the entry point at "
                  f"import; define it with `def {self.entry_point}(...)` (or `= _Fn.apply` of a "
                  "torch.autograd.Function of this module)")

    def visit_For(self, node: ast.For | ast.comprehension, scope: Scope) -> None:
        for child in facts_lib.children(node):
            if child is node.iter:
                self.read(child, scope)
            else:
                self.visit(child, scope)

    visit_comprehension = visit_For


_HANDLERS = {getattr(ast, name[6:]): method for cls in reversed(_Gate.__mro__) for name, method in vars(cls).items()
             if name.startswith("visit_") and hasattr(ast, name[6:])}


def _plain_wrapper(function: ast.AST | None) -> bool:
    """True for `def deco(fn): def wrapper(...): ...; return wrapper`: a decorator that keeps
    nothing at import (no allocation, no table), whose wrapper the gate judges like any function."""
    if not isinstance(function, ast.FunctionDef) or function.decorator_list:
        return False
    inner = {s.name for s in function.body if isinstance(s, ast.FunctionDef)}
    return bool(inner) and all(
        is_docstring(s) or isinstance(s, ast.FunctionDef) or
        (isinstance(s, ast.Return) and isinstance(s.value, ast.Name) and s.value.id in inner)
        for s in function.body)
