"""What the static gate learns about a module before judging its lines.

A first pass over the top level and the host functions (kernel bodies are walked once, by
the gate itself) finds what the rules need (`Facts`), such as what each module-level name
holds: an immutable value, a read-only table of constants, or an object the gate cannot see
into. Which names hold tensors is a small flow-insensitive inference: tensor-annotated
parameters (and, for built-in tasks, the entry point's and the launch wrappers' parameters)
are tensors, so are torch allocations and views of tensors, and a helper or method called
with a tensor gets a tensor parameter. It is what lets the gate refuse `x + y` on the host.
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from fitness.judge.policy import rules

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NOT_TENSOR_CALLS = ("torch.device", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.Size",
                     "torch.is_tensor", "torch.cuda", "torch.version", "torch.nn", "torch.no_grad")
_RANK = {"def": 0, "value": 1, "table": 2, "opaque": 3}


def children(node: ast.AST) -> list[ast.AST]:
    """Returns the child nodes that can hold code (not names, contexts or operators)."""
    fields = _CODE_FIELDS.get(type(node))
    if fields is None:
        fields = _CODE_FIELDS[type(node)] = tuple(f for f in node._fields if f not in _LEAF_FIELDS)
    found = []
    for field in fields:
        value = getattr(node, field, None)
        if type(value) is list:
            found.extend(v for v in value if isinstance(v, ast.AST))
        elif value is not None and isinstance(value, ast.AST):
            found.append(value)
    return found


_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "kind", "type_comment", "module",
                          "level", "conversion", "simple", "is_async"})
_CODE_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}


@dataclasses.dataclass
class Facts:
    """Module-wide names; see the module docstring."""

    aliases: dict[str, str] = dataclasses.field(default_factory=dict)   # "tl" -> "triton.language"
    import_paths: dict[str, set[str]] = dataclasses.field(default_factory=dict)  # every path a name is imported as
    modules: set[str] = dataclasses.field(default_factory=set)          # names bound to a module
    kernels: set[str] = dataclasses.field(default_factory=set)          # @triton.jit names
    kernel_defs: set[ast.AST] = dataclasses.field(default_factory=set)
    defs: dict[str, ast.AST] = dataclasses.field(default_factory=dict)   # module-level functions
    module_kinds: dict[str, str] = dataclasses.field(default_factory=dict)  # "def"/"value"/"table"/"opaque"
    grids: set[str] = dataclasses.field(default_factory=set)            # names launched as kernel[name]
    classes: set[str] = dataclasses.field(default_factory=set)
    method_defs: dict[str, list[ast.AST]] = dataclasses.field(default_factory=dict)  # name -> methods of that name
    autograd_classes: set[str] = dataclasses.field(default_factory=set)  # torch.autograd.Function subclasses
    wrappers: set[ast.AST] = dataclasses.field(default_factory=set)     # forward/__call__ methods
    loggers: set[str] = dataclasses.field(default_factory=set)          # logger = logging.getLogger(...)
    value_classes: set[str] = dataclasses.field(default_factory=set)    # instances hold only their arguments
    local: dict[ast.AST, frozenset[str]] = dataclasses.field(default_factory=dict)  # host function -> names
    tensors: dict[ast.AST, set[str]] = dataclasses.field(default_factory=dict)      # host function -> tensors
    owned: dict[ast.AST, frozenset[str]] = dataclasses.field(default_factory=dict)  # names bound only to new containers
    owners: dict = dataclasses.field(default_factory=dict)  # method or class name -> the class's methods
    attributes: set[str] = dataclasses.field(default_factory=set)       # names of the module's own members
    instances: dict = dataclasses.field(default_factory=dict)  # function (None: module) -> names of our objects

    def add_import(self, node: ast.AST, policy: rules.Policy) -> None:
        """Records the names an `import` or `from ... import` binds."""
        for name, path in imported(node):
            self.aliases[name] = path
            self.import_paths.setdefault(name, set()).add(path)
            if isinstance(node, ast.Import) or path in policy.modules:
                self.modules.add(name)


def imported(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """Returns (name, dotted path) of each name an import binds (none for a relative import)."""
    if isinstance(node, ast.Import):
        return [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                for a in node.names]
    if node.level or not node.module:
        return []
    return [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]


@dataclasses.dataclass(frozen=True)
class Scope:
    """Where a node sits: module level, a host function, or a @triton.jit body."""

    kind: str                               # "module", "host" or "kernel"
    local: frozenset[str] = frozenset()     # names the function binds
    outer: frozenset[str] = frozenset()     # enclosing functions' names, readable from closures
    tensors: frozenset[str] = frozenset()   # local names holding tensors
    self_name: str | None = None            # a method's first parameter
    in_init: bool = False
    ctx_name: str | None = None             # an autograd.Function method's ctx (per call)
    node: ast.AST | None = None             # the function itself

    def outlives(self, root: str) -> bool:
        """True when the value named `root` outlives the call: not bound by it, or the instance
        outside __init__."""
        return root not in self.local or (root == self.self_name and not self.in_init)


def code(node: ast.AST) -> str:
    """Returns the source of `node` on one line, cut to 60 characters, for a violation's detail."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def parameters(args: ast.arguments) -> list[ast.arg]:
    """Returns the named parameters of a function or lambda (not *args, **kwargs)."""
    return args.posonlyargs + args.args + args.kwonlyargs


def defaults(args: ast.arguments) -> list[ast.expr]:
    return args.defaults + [d for d in args.kw_defaults if d is not None]


def targets(node: ast.AST) -> list[ast.expr]:
    """Returns what a statement binds: assignment, walrus, loop and `with ... as` targets."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.With):
        return [item.optional_vars for item in node.items if item.optional_vars]
    binds = (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.comprehension)
    return [node.target] if isinstance(node, binds) else []


def path_of(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Returns the dotted path of `tl.load` / `torch.cuda.Event`-like chains, None for others."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        return ".".join([aliases[node.id], *reversed(parts)])
    return None


def root_name(node: ast.AST) -> str | None:
    """Returns `a` for `a.b[c].d`, None when the chain starts at a call or a literal."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def gather(tree: ast.Module, policy: rules.Policy, entry_point: str, implicit: tuple = ()) -> Facts:
    """Returns the facts of a parsed candidate module under `policy`; `implicit`: the import
    statements of the harness appended to the module, which bind what the module does not."""
    facts = Facts()
    top = _top_level(tree.body)
    for node in top:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            facts.add_import(node, policy)
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | \
        {n.name for n in top if isinstance(n, (*_FUNCTIONS, ast.ClassDef))} | set(facts.aliases)
    harness = Facts()
    for node in implicit:
        harness.add_import(node, policy)
    for name, path in harness.aliases.items():
        if name not in own:
            facts.aliases[name] = path
            if name in harness.modules:
                facts.modules.add(name)
    for node in top:
        if isinstance(node, _FUNCTIONS):
            facts.defs[node.name] = node
            facts.module_kinds[node.name] = "def"
            if any(path_of(d.func if isinstance(d, ast.Call) else d, facts.aliases) == "triton.jit"
                   for d in node.decorator_list):
                facts.kernels.add(node.name)
                facts.kernel_defs.add(node)
        elif isinstance(node, ast.ClassDef):
            facts.classes.add(node.name)
            facts.module_kinds[node.name] = "def"
            methods = [f for f in node.body if isinstance(f, _FUNCTIONS)]
            facts.owners[node.name] = methods
            facts.attributes |= {n.id for s in node.body for t in targets(s) for n in ast.walk(t)
                                 if isinstance(n, ast.Name)}
            facts.attributes |= {t.attr for n in ast.walk(node) for t in targets(n) if isinstance(t, ast.Attribute)}
            for method in methods:
                facts.owners[method] = [m for m in methods if _first(m)]
                facts.attributes.add(method.name)
                facts.method_defs.setdefault(method.name, []).append(method)
                if method.name in WRAPPER_METHODS:
                    facts.wrappers.add(method)
            if any(path_of(b, facts.aliases) == "torch.autograd.Function" or getattr(b, "id", None)
                   in facts.autograd_classes for b in node.bases):
                facts.autograd_classes.add(node.name)
            if _holds_only_its_arguments(node, facts):
                facts.value_classes.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            _classify(node, facts)
    hosts = {}
    for node in top:
        functions = [f for f in node.body if isinstance(f, _FUNCTIONS)] if isinstance(node, ast.ClassDef) \
            else [node] if isinstance(node, _FUNCTIONS) and node not in facts.kernel_defs else []
        for function in functions:
            _scan(function, hosts, facts)
    facts.local = {f: frozenset(scan[0]) for f, scan in hosts.items()}
    facts.owned = {f: _owned(f, scan[1]) for f, scan in hosts.items()}
    for function, assigns in [(None, [n for n in top if isinstance(n, ast.Assign)])] + \
            [(f, scan[1]) for f, scan in hosts.items()]:
        facts.instances[function] = {t.id for node in assigns for t, v in _bindings(node)
                                     if isinstance(t, ast.Name) and makes_instance(v, facts.classes)}
    facts.tensors = _infer_tensors(hosts, facts, policy, entry_point)
    return facts


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Returns module-level statements, looking inside top-level if/try/with blocks."""
    found = []
    for node in body:
        found.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                found.extend(_top_level(getattr(node, block, [])))
            for handler in getattr(node, "handlers", []):
                found.extend(_top_level(handler.body))
    return found


def _classify(node: ast.AST, facts: Facts) -> None:
    """Records what a module-level assignment binds: a value, a table, or an opaque object."""
    value = node.value
    call = path_of(value.func, facts.aliases) if isinstance(value, ast.Call) else None
    if call == "logging.getLogger" and isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], ast.Name):
        facts.loggers.add(node.targets[0].id)
    jit = call == "triton.jit" and value.args and getattr(value.args[0], "id", None) in facts.defs
    if jit:
        kind = "def"
        facts.kernel_defs.add(facts.defs[value.args[0].id])
    elif _function_alias(value, call, facts):
        kind = "def"
    elif isinstance(value, ast.Lambda) or frozen(value, facts):
        kind = "value"
    elif call == "triton.runtime.driver.active.utils.get_device_properties":
        kind = "table"  # a fresh dict of numbers, read by subscript
    elif isinstance(value, ast.Dict) and None not in value.keys:
        kind = "table" if all(frozen(v, facts) for v in value.keys + value.values) else "opaque"
    elif isinstance(value, (ast.List, ast.Set)):
        kind = "table" if all(frozen(v, facts) for v in value.elts) else "opaque"
    else:
        kind = "opaque"
    for name in (n.id for t in targets(node) for n in ast.walk(t) if isinstance(n, ast.Name)):
        if name in facts.module_kinds or (name in facts.loggers and call != "logging.getLogger"):
            facts.loggers.discard(name)  # bound twice: not known to hold a logger
        facts.module_kinds[name] = max(facts.module_kinds.get(name, "def"), kind, key=_RANK.get)
        if jit:
            facts.kernels.add(name)


def _function_alias(value: ast.AST, call: str | None, facts: Facts) -> bool:
    """True for `_Fn.apply` of an autograd.Function and `functools.partial(fn, constants...)`:
    a function of the module under another name, holding nothing a call could change."""
    if isinstance(value, ast.Attribute):
        return value.attr == "apply" and getattr(value.value, "id", None) in facts.autograd_classes
    return call == "functools.partial" and bool(value.args) and \
        facts.module_kinds.get(getattr(value.args[0], "id", None)) == "def" and \
        all(frozen(a, facts) for a in value.args[1:] + [k.value for k in value.keywords])


def _holds_only_its_arguments(node: ast.ClassDef, facts: Facts) -> bool:
    """True for a class whose instances hold nothing but what they were made with: every store
    on `self` is in __init__ and stores a parameter or a constant (NamedTuples, frozen configs,
    stateless wrappers). An instance made at module level from constants is then a constant."""
    if any(isinstance(n, ast.keyword) and n.arg == "default_factory" for n in ast.walk(node)):
        return False  # a dataclass field made per instance: a container the instance carries
    for function in (f for f in node.body if isinstance(f, _FUNCTIONS)):
        params = {a.arg for a in parameters(function.args)}
        for child in ast.walk(function):
            if isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets(child)) and (
                        function.name != "__init__" or child.value is None or
                        not _made_of(child.value, params, facts)):
                    return False
    return True


def _made_of(node: ast.AST, params: set[str], facts: Facts) -> bool:
    """True for an expression of `params` and constants only (`block or 512`, `(m, n)`)."""
    if isinstance(node, ast.Name) and node.id in params:
        return True
    if isinstance(node, (ast.BoolOp, ast.IfExp, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.Compare)):
        return all(_made_of(c, params, facts) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
    return frozen(node, facts)


WRAPPER_METHODS = frozenset({"forward", "backward", "__call__"})
"""Methods through which a class wraps a launch (autograd.Function, nn.Module-like): judged
like the entry point, their parameters after the first hold tensors."""


def frozen(node: ast.AST, facts: Facts) -> bool:
    """Returns True for an expression whose value no one can mutate (constants, tuples of them)."""
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(node, ast.Tuple):
        return all(frozen(e, facts) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return frozen(node.operand, facts)
    if isinstance(node, ast.BinOp):
        return frozen(node.left, facts) and frozen(node.right, facts)
    if isinstance(node, ast.Name):
        return node.id in facts.aliases or facts.module_kinds.get(node.id) in ("def", "value")
    if isinstance(node, ast.Subscript):  # an entry of a module-level table of constants
        return facts.module_kinds.get(getattr(node.value, "id", None)) == "table" and frozen(node.slice, facts)
    if isinstance(node, ast.Attribute):  # a module path, or a constant field of a class here
        return path_of(node, facts.aliases) is not None or getattr(node.value, "id", None) in facts.classes
    if isinstance(node, ast.Call):
        path = path_of(node.func, facts.aliases)
        func = getattr(node.func, "id", None)
        pure = path in rules.FROZEN_CALLS or (path or "").startswith("math.") or \
            (path is None and func in rules.FROZEN_BUILTINS and func not in facts.module_kinds) or \
            (path is None and func in facts.value_classes)
        return pure and all(frozen(a, facts) for a in node.args + [k.value for k in node.keywords])
    return False


def _scan(function: ast.AST, hosts: dict, facts: Facts) -> None:
    """Records (bound names, assignments, calls by name) of a host function and its inner ones,
    and the names its launches use as grids.

    Imports are left out of the bound names: an imported name is an alias wherever it is
    bound, so the path rules apply to it.
    """
    args = function.args
    bound = {a.arg for a in parameters(args) + [args.vararg, args.kwarg] if a}
    assigns, calls = [], []
    hosts[function] = (bound, assigns, calls)
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            bound.add(node.name)
            if isinstance(node, _FUNCTIONS):
                _scan(node, hosts, facts)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        if isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension)):
            assigns.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            calls.append(node)
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in facts.kernels \
                and isinstance(node.slice, ast.Name):
            facts.grids.add(node.slice.id)
        if not isinstance(node, ast.Lambda):
            stack.extend(children(node))


def is_tensor(node: ast.AST, tensors: set[str], facts: Facts) -> bool:
    """Returns True if `node` may evaluate to a tensor or hold one, as far as the inference can
    tell: containers, unpacking, iteration and objects made with a tensor hold it, so
    `(x,)[0]`, `{"x": x}["x"]` and `obj.x` are tensors too. `tensors` holds local names and
    `self.attr` for attributes an instance was given a tensor in."""
    held = functools.partial(is_tensor, tensors=tensors, facts=facts)
    if isinstance(node, ast.Name):
        return node.id in tensors
    if isinstance(node, (ast.Subscript, ast.Starred)):
        return held(node.value)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and f"{node.value.id}.{node.attr}" in tensors:
            return True
        return node.attr not in _METADATA and held(node.value)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.BoolOp)):
        return any(held(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
    if isinstance(node, ast.Dict):
        return any(held(v) for v in node.values)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return held(node.elt)
    if isinstance(node, ast.DictComp):
        return held(node.value)
    if isinstance(node, ast.Call):
        path = path_of(node.func, facts.aliases)
        if path is not None:
            return path.startswith("torch.") and not path.startswith(_NOT_TENSOR_CALLS) \
                and path.rsplit(".", 1)[-1] not in rules.HOST_READS
        if isinstance(node.func, ast.Name):  # a container, an iterator, an object made of a tensor
            return (node.func.id in _CARRIERS or node.func.id in facts.classes) and \
                any(held(a) for a in node.args + [k.value for k in node.keywords])
        return isinstance(node.func, ast.Attribute) and node.func.attr not in rules.SHAPE_QUERIES \
            and node.func.attr not in rules.HOST_READS and held(node.func.value)
    return False


_METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad",
                       "is_leaf", "itemsize", "nbytes", "names", "is_sparse", "is_quantized", "is_meta"})
"""Tensor attributes that are no tensor (an object's other attributes may hold one)."""
_CARRIERS = frozenset({"list", "tuple", "dict", "set", "frozenset", "zip", "enumerate", "reversed", "iter",
                       "next", "sorted", "filter", "map", "min", "max"})
_FRESH = frozenset({"list", "dict", "set", "sorted", "bytearray"})


def makes_instance(node: ast.AST, classes: set[str], names: frozenset[str] = frozenset()) -> bool:
    """True when `node` may be (or hold) an object of a class of the module (`Cls(...)`, a
    container of one, `a or Cls()`, or one of `names`)."""
    if isinstance(node, ast.Call):
        return getattr(node.func, "id", None) in classes
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, (ast.Starred, ast.Subscript)):
        return makes_instance(node.value, classes, names)
    parts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else node.values if isinstance(node, ast.BoolOp) \
        else [node.body, node.orelse] if isinstance(node, ast.IfExp) else []
    return any(makes_instance(p, classes, names) for p in parts)


def _first(function: ast.AST) -> str | None:
    positional = function.args.posonlyargs + function.args.args
    return positional[0].arg if positional else None


def _owned(function: ast.AST, assigns: list) -> frozenset[str]:
    """Returns the names `function` binds only to containers it makes (`rows = []`): the
    objects it may mutate (never a parameter, an attribute read, a loop variable, a result)."""
    fresh, stale = set(), {a.arg for a in parameters(function.args)}
    for node in assigns:
        for target in (t for t in targets(node) if not isinstance(t, (ast.Subscript, ast.Attribute))):
            new = isinstance(target, ast.Name) and not isinstance(node, (ast.For, ast.comprehension)) and (
                isinstance(node.value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
                or (isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) in _FRESH))
            (fresh if new else stale).update(n.id for n in ast.walk(target)
                                             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return frozenset(fresh - stale)


def _bindings(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """Returns (target, value) pairs of an assignment or loop, position by position where a
    tuple meets tuples (`a, b = x, 1`, `for name, t in (("w", w),)`); else every name of an
    unpacking gets the whole, and `d[k] = v` binds `d` (it holds `v` now)."""
    loop = isinstance(node, (ast.For, ast.comprehension))
    value = node.iter if loop else node.value
    pairs = []
    for target in targets(node):
        rows = value.elts if loop and isinstance(value, (ast.Tuple, ast.List)) else [] if loop else [value]
        if isinstance(target, ast.Tuple) and rows and all(
                isinstance(r, ast.Tuple) and len(r.elts) == len(target.elts) for r in rows):
            pairs.extend((t, ast.Tuple(elts=[r.elts[i] for r in rows])) for i, t in enumerate(target.elts))
        else:
            pairs.append((target, value))
    found = []
    for target, part in pairs:
        while isinstance(target, ast.Subscript):
            target = target.value
        names = [target] if isinstance(target, (ast.Name, ast.Attribute)) else \
            [n for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        found.extend((n, part) for n in names if part is not None)
    return found


def _infer_tensors(hosts: dict, facts: Facts, policy: rules.Policy, entry_point: str) -> dict:
    """Returns {host function: tensor names}, iterated to a fixed point across helper calls
    and across the methods of a class (`self.x = x` in one, `self.x` read in another)."""
    entry = facts.defs.get(entry_point)
    tensors = {f: set() for f in hosts}
    for f in hosts:
        positional = f.args.posonlyargs + f.args.args
        required = len(positional) - len(f.args.defaults)
        for i, a in enumerate(positional + f.args.kwonlyargs):
            if a.annotation is not None and path_of(a.annotation, facts.aliases) == "torch.Tensor":
                tensors[f].add(a.arg)
            elif policy.entry_params_are_tensors and a.annotation is None and i < required and (
                    f is entry or (f in facts.wrappers and i > 0)):
                tensors[f].add(a.arg)
    total = -1
    while total != sum(map(len, tensors.values())):
        total = sum(map(len, tensors.values()))
        for f, (_, assigns, calls) in hosts.items():
            mine = tensors[f]
            for node in assigns:
                for target, value in _bindings(node):
                    if not is_tensor(value, mine, facts):
                        continue
                    if isinstance(target, ast.Name):
                        mine.add(target.id)
                    elif isinstance(target.value, ast.Name) and target.value.id == _first(f):  # self.x = <tensor>
                        for method in facts.owners.get(f, ()):
                            tensors[method].add(f"{_first(method)}.{target.attr}")
            for call in calls:
                receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
                if call.func.attr in rules.MUTATING_METHODS if receiver else False:  # rows.append(x)
                    if isinstance(receiver, ast.Name) and any(is_tensor(a, mine, facts) for a in call.args):
                        mine.add(receiver.id)
                for callee, skip in _callees(call, facts):
                    if callee in tensors:
                        params = [a.arg for a in callee.args.posonlyargs + callee.args.args][skip:]
                        tensors[callee] |= {p for p, a in zip(params, call.args) if is_tensor(a, mine, facts)}
                        tensors[callee] |= {k.arg for k in call.keywords
                                            if k.arg and is_tensor(k.value, mine, facts)}
    return tensors


def _callees(call: ast.Call, facts: Facts) -> list[tuple[ast.AST, int]]:
    """Returns the functions of the module a call may reach, with how many leading parameters
    the call does not fill: `helper(x)` reaches `helper`; `obj.method(x)` every method of that
    name in the module's classes (its `self` filled by the instance, unless it is static)."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in facts.classes:  # `_Box(x)` fills __init__
        return [(m, 1) for m in facts.method_defs.get("__init__", ()) if m in facts.owners.get(func.id, ())]
    if isinstance(func, ast.Name):
        return [(facts.defs[func.id], 0)] if func.id in facts.defs else []
    return [(m, 0 if any(getattr(d, "id", None) == "staticmethod" for d in m.decorator_list) else 1)
            for m in facts.method_defs.get(func.attr, ())]
