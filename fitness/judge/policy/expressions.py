"""The static gate's rules for expressions: calls, subscripts, operators, lambdas and grids.

On the host, a call may allocate, make a view or query a shape, and nothing else that
touches a tensor: a method outside the task's tensor allowlist (x.sum(), x.copy_()) is torch
compute, `x.item()` / `int(x)` / `sum(x)` read values, `x + y` and `x[idx]` compute (all
admitted where the policy's `host_compute` is). A container method that mutates, or a
subscript store, needs a container the call made itself; anything else (a parameter, an
attribute, a kernel's hooks, a logger's filters) is a library object or state outliving it. Inside a @triton.jit body only triton.language, other kernels and a few builtins may be
called. A lambda, or a function passed as `kernel[grid]`, runs inside Triton's launch, so it
may only do arithmetic on sizes.
"""

from __future__ import annotations

import ast
import dataclasses
import string

from fitness.judge.policy import facts as facts_lib
from fitness.judge.policy import rules
from fitness.judge.policy.facts import Scope, code, defaults, dunder, is_docstring, parameters


class ExpressionRules:
    """Mixin of the gate (see `policy._Gate`): the rules for calls, subscripts, operators, grids."""

    def visit_Call(self, node: ast.Call, scope: Scope) -> None:
        for keyword in node.keywords:
            if keyword.arg in rules.LAUNCH_HOOK_KEYWORDS:
                self.flag(keyword.value, "launch-hook", f"`{keyword.arg}=` runs Python inside Triton's "
                          "launch or autotuning; pass only configs, keys and launch options")
        func = node.func
        callee = func  # what is left to visit once this call is judged
        if facts_lib.path_of(func, self.facts.aliases) == "logging.getLogger" and scope.kind == "module" and \
                [getattr(a, "id", None) for a in node.args] == ["__name__"] and not node.keywords:
            return  # the module logger: `__name__` read for its name only
        self.called.add(id(func))
        if isinstance(func, ast.Attribute) and self.logger(func.value, scope) and scope.kind != "kernel":
            self.logger_call(node, func, scope)
            callee = None
        elif scope.kind == "kernel":
            self.kernel_call(node, scope)
        elif facts_lib.path_of(func, self.facts.aliases) == "functools.reduce" and not self.policy.host_compute and any(
                self.tensor(e, scope) for a in node.args[1:]
                for e in (a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])):
            self.flag(node, "host-torch", f"`{code(node)}` folds tensors on the host (torch math); "
                      "compute in a Triton kernel", "functools.reduce-tensors")
        elif self.reads_values(node, scope) and not self.policy.host_compute:
            self.flag_host_read(node)
            is_path = facts_lib.path_of(func, self.facts.aliases) is not None
            callee = None if is_path else func.value if isinstance(func, ast.Attribute) else func
        elif isinstance(func, ast.Attribute) and self.method_call(node, func, scope):
            callee = None
            self.read(func.value, scope)
        if scope.kind != "kernel":
            self.check_launch(node, scope)
        if isinstance(func, ast.Name) and func.id == "hasattr" and func.id not in scope.local and not (
                len(node.args) == 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and not node.args[1].value.startswith("_")):
            self.flag(node, "builtin", f"`{code(node)}` probes an attribute by a computed or private "
                      "name; write `hasattr(obj, \"public_name\")` with the name itself")
        names_ok = isinstance(func, ast.Name) and func.id in rules.READ_BUILTINS
        for arg in node.args + [k.value for k in node.keywords]:
            if isinstance(arg, ast.Name) and arg.id in self.facts.kernels and scope.kind != "kernel":
                continue  # a kernel handed to a launcher, which launches it as kernel[grid](...)
            if getattr(func, "id", None) == "hasattr" and isinstance(arg, ast.Name) and arg.id in self.facts.modules:
                continue  # `hasattr(torch, "float8_e4m3fn")`: a feature probe by a public name
            if names_ok:
                self.read(arg, scope)
            else:
                self.visit(arg, scope)
        if callee is not None:
            self.visit(callee, scope)

    def check_launch(self, node: ast.Call, scope: Scope) -> None:
        """Judges the grid of anything called like a launch: `k[grid](...)` where `k` is a kernel
        handed in as a value (a local name, an attribute, a table entry), and `k.run(..., grid=...)`.
        A module-level table of functions called by key (`_ACTIVATIONS[name](x)`) is no launch."""
        func = node.func
        if isinstance(func, ast.Subscript) and not (isinstance(func.value, ast.Name) and (
                func.value.id in self.facts.kernels or func.value.id not in scope.local)):
            self.check_launch_grid(func.slice, scope)
        for arg in node.args + [k.value for k in node.keywords] if isinstance(func, ast.Subscript) else ():
            if self.instance(arg, scope):
                self.flag(arg, "launch-hook", f"`{code(arg)}` hands an object of a class of this module to a "
                          "launch, where Triton runs its methods (data_ptr, a constexpr's methods); pass "
                          "tensors, numbers, dtypes and constants")
        for keyword in node.keywords:
            if keyword.arg == "grid" and isinstance(func, ast.Attribute):
                self.check_launch_grid(keyword.value, scope)

    def instance(self, node: ast.AST, scope: Scope) -> bool:
        """True when `node` may be (or hold) an object of a class of this module."""
        made = self.facts.instances.get(None, set()) - scope.local | self.facts.instances.get(scope.node, set())
        return facts_lib.makes_instance(node, self.facts.classes, frozenset(made))

    def logger_call(self, node: ast.Call, func: ast.Attribute, scope: Scope) -> None:
        """Checks `logger.info(...)` on the module logger: messages only, never tensor values."""
        if func.attr not in rules.LOGGER_METHODS:
            self.flag(node, "global-state", f"`{code(node)}` changes a logger, which outlives the call; call only "
                      f"{', '.join(sorted(rules.LOGGER_METHODS))} on it", "logger." + func.attr)
        for arg in node.args[1:] + [k.value for k in node.keywords]:
            if self.tensor(arg, scope):
                self.flag(arg, "host-read", f"`{code(arg)}` passed to the logger prints tensor values on "
                          "the host; log shapes and dtypes instead", "logger-tensor")

    def reads_values(self, node: ast.Call, scope: Scope) -> bool:
        """Returns True for `x.item()`, `torch.from_numpy(a)`, `int(x)`, `sum(x)` on a tensor..."""
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr in rules.HOST_READS
        return isinstance(func, ast.Name) and func.id in rules.PYTHON_BUILTINS and \
            func.id not in rules.TENSOR_SAFE_BUILTINS and func.id not in scope.local and \
            func.id not in self.facts.module_kinds and any(self.tensor(a, scope) for a in node.args)

    def method_call(self, node: ast.Call, func: ast.Attribute, scope: Scope) -> bool:
        """Checks a host-side `obj.method(...)`; returns True if `obj` is only read."""
        method = func.attr
        if self.check_private(func, scope):
            return True
        if facts_lib.path_of(func, self.facts.aliases) is not None or dunder(method) \
                or method in rules.LAUNCH_HOOK_ATTRIBUTES or getattr(func.value, "id", None) in self.facts.kernels:
            return False  # a module path, or refused by visit_Attribute
        root = facts_lib.root_name(func.value)
        mutates = method in rules.MUTATING_METHODS or method.endswith("_")  # x.copy_(...) is in place
        receiver = func.value.id if isinstance(func.value, ast.Name) else None
        if scope.ctx_name and receiver == scope.ctx_name and method in _CTX_METHODS:
            return False
        if receiver in self.facts.autograd_classes and method == "apply" and receiver not in scope.local:
            return False
        if scope.kind == "host" and mutates and root is not None and scope.outlives(root):
            self.flag(node, "global-state", f"`{code(node)}` mutates `{root}`, which outlives the call; "
                      "keep state local to the call")
        elif method in rules.MUTATING_METHODS and not self.owned(func.value, scope):
            self.flag_mutation(node)
        elif method == "to" and any(_names_cpu(a) for a in node.args + [k.value for k in node.keywords]):
            self.flag(node, "host-read", f"`{code(node)}` copies a tensor to the host; compute in a Triton kernel")
        elif method == "format":
            if not (isinstance(func.value, ast.Constant) and _plain_format(func.value.value)):
                self.flag(node, "dunder", f"`{code(node)}`: format fields may not read attributes or items; "
                          "use an f-string")
        elif not (method in self.policy.tensor_methods or method in rules.PYTHON_METHODS or self.policy.host_compute
                  or (method in self.facts.method_defs and not dunder(method) and not self.tensor(func.value, scope))):
            self.flag(node, "host-torch", f"`{code(node)}` is not allowed on the host: host code may only "
                      f"{self.host_hint()}", "." + method)
        return isinstance(func.value, ast.Name) and method in rules.READ_METHODS

    def owned(self, node: ast.AST, scope: Scope) -> bool:
        """True for a container the call made itself (`rows = []`), or the instance in __init__."""
        if not isinstance(node, ast.Name):
            return False
        return node.id in self.facts.owned.get(scope.node, ()) or (scope.in_init and node.id == scope.self_name)

    def harness_input(self, root: str | None, scope: Scope) -> bool:
        """True, where host compute is admitted, for a parameter of the entry point or a launch
        wrapper (forward, __call__): the harness's own data (a write to it is judged at run time)."""
        function = scope.node
        entry = function is self.facts.defs.get(self.entry_point) or function in self.facts.wrappers
        return self.policy.host_compute and entry and root in {a.arg for a in parameters(function.args)} \
            and root != scope.self_name

    def flag_mutation(self, node: ast.AST) -> None:
        self.flag(node, "mutation", f"`{code(node)}` changes an object this call did not make (a parameter, "
                  "an attribute, a library object such as a kernel, a logger or a partial); build a new "
                  "list or dict in the call and change that")

    def kernel_call(self, node: ast.Call, scope: Scope) -> None:
        """Flags a call in a @triton.jit body to anything but triton.language, kernels, KERNEL_BUILTINS,
        and inline assembly that reads a clock."""
        func = node.func
        text = " ".join(n.value for a in node.args + [k.value for k in node.keywords] for n in ast.walk(a)
                        if isinstance(n, ast.Constant) and isinstance(n.value, str))
        if any(clock in text for clock in rules.KERNEL_CLOCKS):
            self.flag_clock(node, scope, "asm-clock")
        if isinstance(func, ast.Name):
            path = self.facts.aliases.get(func.id, "")
            ok = func.id in self.facts.kernels or func.id in rules.KERNEL_BUILTINS or \
                path.startswith("triton.language")
        elif isinstance(func, ast.Attribute):  # a method of a kernel value, or a path check_path sees
            root = facts_lib.root_name(func)
            ok = root is None or root in self.facts.aliases or root not in self.facts.module_kinds
        else:
            ok = False
        if not ok:
            self.flag(node, "kernel-body", f"`{code(node)}` in @triton.jit function `{scope.node.name}` "
                      "calls plain Python; kernels call only tl.*, other @triton.jit functions, "
                      "range/tl.static_range and min/max")

    def visit_Subscript(self, node: ast.Subscript, scope: Scope) -> None:
        value = node.value
        if isinstance(node.ctx, (ast.Store, ast.Del)) and scope.kind == "kernel":
            self.flag(node, "kernel-body", f"`{code(node)}` stores by subscript in @triton.jit function "
                      f"`{scope.node.name}`; a kernel writes memory with tl.store only")
        launch = isinstance(value, ast.Name) and value.id in self.facts.kernels and scope.kind != "kernel"
        if launch:  # `kernel[grid]`: the one way a kernel is used on the host
            self.check_launch_grid(node.slice, scope)
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(node.ctx, ast.Load) and self.tensor(value, scope) and not self.policy.host_compute and \
                any(self.tensor(i, scope) for i in index):
            self.flag(node, "host-torch", f"`{code(node)}` indexes a tensor with a tensor (a gather "
                      "on the host); gather in a Triton kernel")
        if not launch:
            self.read(value, scope) if isinstance(node.ctx, ast.Load) else self.visit(value, scope)
        self.visit(node.slice, scope)
        if isinstance(node.ctx, (ast.Store, ast.Del)) and scope.kind == "host":
            self.check_store(node, scope)  # after its parts, which may name a worse reach first

    def check_store(self, node: ast.Subscript, scope: Scope) -> None:
        """Flags `a[i] = v` on the host unless `a` is a container the call made (or, where
        host compute is admitted, a tensor the call may write)."""
        root, value = facts_lib.root_name(node), node.value
        if root is not None and scope.outlives(root):
            self.flag(node, "global-state", f"`{code(node)}` stores into `{root}`, which outlives "
                      "the call; keep state local to the call")
        elif self.tensor(value, scope) and not self.policy.host_compute:
            self.flag(node, "host-torch", f"`{code(node)}` writes a tensor on the host; "
                      "write outputs from a Triton kernel")
        elif not (self.tensor(value, scope) or self.owned(value, scope) or self.harness_input(root, scope)):
            self.flag_mutation(node)

    def visit_Lambda(self, node: ast.Lambda, scope: Scope) -> None:
        for default in defaults(node.args):
            self.flag(default, "global-state", f"`{code(default)}`: a lambda default outlives the call")
        bad = _grid_violation(node.body, self.facts.aliases)
        if bad is not None:
            self.flag(bad, "grid-callable", f"`{code(bad)}` in `{code(node)}`: a lambda (a launch grid or "
                      "heuristic) may use only names, constants, arithmetic, meta[...] subscripts, "
                      "triton.cdiv, triton.next_power_of_2, min, max and shape queries")
        names = {a.arg for a in parameters(node.args)}
        self.visit(node.body, dataclasses.replace(scope, local=scope.local | names))

    def check_launch_grid(self, grid: ast.AST, scope: Scope) -> None:
        """Flags a launch grid that is not a tuple, a lambda, or a grid function of this module.

        Triton calls a callable grid inside the launch, where no torch call may hide, so the
        grid must be one the gate has read: a lambda (checked where it is written), a function
        named at the launch, or a local name bound only to those, to a tuple, or to the result
        of a module function that returns tuples.
        """
        if not self.grid_value(grid, scope, 0):
            self.flag(grid, "grid-callable", f"`{code(grid)}` as a launch grid: a grid is a tuple, a lambda, "
                      "or a function of this module named at the launch (not a parameter, a table entry, "
                      "an object's attribute or a call's result)")

    def grid_value(self, grid: ast.AST, scope: Scope, depth: int) -> bool:
        """True when `grid` can only be a tuple, a lambda or a module grid function (checked)."""
        if isinstance(grid, (ast.Tuple, ast.List, ast.Lambda, ast.Constant)) or self.sizes_call(grid):
            return True
        if isinstance(grid, ast.IfExp):
            return self.grid_value(grid.body, scope, depth) and self.grid_value(grid.orelse, scope, depth)
        if not isinstance(grid, ast.Name) or depth > 8:
            return False
        if grid.id not in scope.local:
            kind = self.facts.module_kinds.get(grid.id)
            if kind == "def" and grid.id in self.defs and grid.id not in self.facts.classes:
                self.check_grid_function(self.defs[grid.id])
                return True
            return kind == "value"
        return self.local_grid(grid.id, scope, depth)

    def local_grid(self, name: str, scope: Scope, depth: int) -> bool:
        """True when every binding of local `name` in the current function is a grid value or an
        inner grid function (never a parameter, a loop variable or a looked-up value)."""
        function = scope.node
        if function is None or name in {a.arg for a in parameters(function.args)}:
            return False
        bound = False
        for node in ast.walk(function):
            targets = facts_lib.targets(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and node is not function:
                bound = True
                self.check_grid_function(node)
            elif any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                single = len(targets) == 1 and isinstance(targets[0], ast.Name)
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and (
                        self.sizes_call(node.value) or (single and self.grid_value(node.value, scope, depth + 1))):
                    bound = True
                else:
                    return False
        return bound

    def sizes_call(self, node: ast.AST) -> bool:
        """True for a call of a module function that returns tuples and defines no function (a
        host helper computing the grid before the launch, `grid = _grid(M, N)`)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return False
        function = self.facts.defs.get(node.func.id)
        if function is None or function in self.facts.kernel_defs or function.decorator_list:
            return False
        inner = [n for n in ast.walk(function) if n is not function]
        return not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in inner) and all(
            isinstance(n.value, (ast.Tuple, ast.List)) for n in inner if isinstance(n, ast.Return))

    def check_grid_function(self, node: ast.FunctionDef) -> None:
        """Flags what a function launched as `kernel[node]` does beyond computing sizes: its
        body may bind local names to size arithmetic and return it, nothing else."""
        if node in self._grids_checked:
            return
        self._grids_checked.add(node)
        if node in self.facts.kernel_defs or node.decorator_list:
            return self.flag(node, "grid-callable", f"grid function `{node.name}` is decorated; a launch "
                             "grid is a plain function returning sizes")
        for default in defaults(node.args):
            self.flag(default, "grid-callable", f"`{code(default)}`: a grid function takes no defaults")
        for statement in node.body:
            if is_docstring(statement):
                continue
            plain = isinstance(statement, ast.Return) or (
                isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets))
            value = statement.value if plain else None
            bad = statement if value is None else _grid_violation(value, self.facts.aliases)
            if bad is not None:
                self.flag(bad, "grid-callable", f"`{code(bad)}` in grid function `{node.name}`: a launch "
                          "grid may only compute sizes (names, constants, arithmetic, meta[...], "
                          "triton.cdiv, triton.next_power_of_2, min, max)")

    def visit_AugAssign(self, node: ast.AugAssign, scope: Scope) -> None:
        if isinstance(node.target, ast.Name) and self.tensor(node.target, scope) and not self.policy.host_compute:
            self.flag(node, "host-torch", f"`{code(node)}` is tensor arithmetic on the host; "
                      "compute in a Triton kernel")
        self.visit(node.target, scope)
        self.visit(node.value, scope)

    def visit_BinOp(self, node: ast.AST, scope: Scope) -> None:
        operands = [getattr(node, f) for f in ("left", "right", "operand") if hasattr(node, f)]
        if any(self.tensor(o, scope) for o in operands) and not self.policy.host_compute:
            self.flag(node, "host-torch", f"`{code(node)}` is tensor arithmetic on the host; "
                      "compute in a Triton kernel")
        for child in facts_lib.children(node):
            self.visit(child, scope)

    visit_UnaryOp = visit_BinOp

    def visit_Compare(self, node: ast.Compare, scope: Scope) -> None:
        plain = all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops)
        if not plain and not self.policy.host_compute and any(self.tensor(o, scope) for o in [node.left, *node.comparators]):
            self.flag(node, "host-torch", f"`{code(node)}` compares tensors on the host; "
                      "compute in a Triton kernel")
        self.visit(node.left, scope)
        for op, operand in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                self.read(operand, scope)
            else:
                self.visit(operand, scope)

    def visit_FormattedValue(self, node: ast.FormattedValue, scope: Scope) -> None:
        if self.tensor(node.value, scope) and not self.policy.host_compute:
            self.flag(node.value, "host-read", f"`{code(node.value)}` in an f-string prints tensor "
                      "values on the host; show shapes and dtypes instead")
        for child in facts_lib.children(node):
            self.visit(child, scope)


_CTX_METHODS = frozenset({"save_for_backward", "mark_dirty", "mark_non_differentiable",
                          "set_materialize_grads"})
"""What an autograd.Function's forward/backward may call on its ctx (which lives for one call)."""


def _names_cpu(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cpu")
               for n in ast.walk(node))


def _plain_format(template: object) -> bool:
    """Returns True for a str.format template whose fields name no attribute or item."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f] if isinstance(template, str) else None
    except ValueError:
        return False
    return fields is not None and not any("." in f or "[" in f for f in fields)


def _grid_violation(expr: ast.AST, aliases: dict[str, str]) -> ast.AST | None:
    """Returns the first node of a grid expression that is more than arithmetic on sizes."""
    if isinstance(expr, (ast.Name, ast.Constant)):
        return expr if isinstance(expr, ast.Name) and expr.id in aliases else None
    if isinstance(expr, ast.Call):
        path = facts_lib.path_of(expr.func, aliases) or getattr(expr.func, "id", None)
        method = isinstance(expr.func, ast.Attribute) and path is None and expr.func.attr in rules.GRID_METHODS
        if expr.keywords or not (path in rules.GRID_CALLS or method):
            return expr
        parts = expr.args if path else [expr.func.value, *expr.args]
    elif isinstance(expr, ast.Attribute):
        if expr.attr not in ("shape", "ndim"):
            return expr
        parts = [expr.value]
    elif isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple,
                           ast.List, ast.Subscript, ast.Slice, ast.Starred)):
        parts = [c for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr)]
    else:
        return expr
    return next((bad for p in parts if (bad := _grid_violation(p, aliases)) is not None), None)
