"""The static gate's rules for names: imports, module paths, attributes and attribute stores.

What a module can reach is decided here. Imports come from a short allowlist; every dotted
path into torch or triton (`torch.cuda.Stream`, `triton.runtime...`) is checked against the
task's policy wherever it appears, so an allowed module cannot become a door to a forbidden
one; a module may not be used as a value (`t = torch; t.ops`), since that would hide the
path. Dunder names and attributes, frame attributes, the introspective builtins (getattr,
vars, eval...) and evaluation paths (typing.ForwardRef) are refused outright; a private `_x`
only on `self` or a class of the module, for a member the module defines. Attribute stores are refused except `self.x = ...` in `__init__` of a module class.
"""

from __future__ import annotations

import ast

from fitness.judge.policy import facts as facts_lib
from fitness.judge.policy import rules
from fitness.judge.policy.facts import Scope, code, dunder


class PathRules:
    """Mixin of the gate (see `policy._Gate`): the rules for imports, names and attributes."""

    def visit_Import(self, node: ast.Import, scope: Scope) -> None:
        for alias in node.names:
            self.check_module(alias.name, node, scope)
        self.check_import_binding(node)
        self.facts.add_import(node, self.policy)

    def check_import_binding(self, node: ast.Import | ast.ImportFrom) -> None:
        """Flags an import that binds a name another import binds to something else (`import torch
        as tl` in one branch, `import triton.language as tl` in the other): the gate could not
        tell which one the code uses."""
        for name, path in facts_lib.imported(node):
            paths = self.facts.import_paths.get(name, {path})
            if paths - {path}:
                self.flag(node, "rebind", f"`{name}` is imported as {' and as '.join(sorted(paths))}; "
                          "import each thing under a name of its own", name)

    def visit_ImportFrom(self, node: ast.ImportFrom, scope: Scope) -> None:
        if node.level or any(a.name == "*" for a in node.names):
            return self.flag(node, "import", f"`{code(node)}`: import by name, from {self.importable()}")
        if node.module.split(".")[0] in ("torch", "triton") and node.module not in self.policy.modules:
            for alias in node.names:  # `from torch.autograd import Function`: each name decides
                self.check_module(f"{node.module}.{alias.name}", node, scope)
        elif self.check_module(node.module, node, scope):
            for alias in node.names:
                path = f"{node.module}.{alias.name}"
                if path not in self.policy.modules:
                    self.check_path(path, node, scope)
        self.check_import_binding(node)
        self.facts.add_import(node, self.policy)

    def check_module(self, module: str, node: ast.AST, scope: Scope) -> bool:
        """Flags an import of `module` the policy does not allow; returns True if allowed.

        Within torch and triton the path rules decide, so `import torch.library` is named
        as torch internals and `from triton.runtime import ...` as a launch hook.
        """
        if module in self.policy.modules:
            return True
        if any(name.startswith(module + ".") for name in rules.DEVICE_QUERIES):
            return True  # `from triton.runtime import driver`: each use is a path checked in full
        if module.split(".")[0] in ("torch", "triton"):
            before = len(self.found)
            self.check_path(module, node, scope)
            return len(self.found) == before
        self.flag(node, "import", f"`{code(node)}` imports `{module}`; a kernel module may import "
                  f"only {self.importable()}", module)
        return False

    def importable(self) -> str:
        return ", ".join(sorted(m for m in self.policy.modules if m.count(".") < 2))

    def check_path(self, path: str, node: ast.AST, scope: Scope) -> None:
        """Flags a use of `torch.x`, `triton.x`, `math.x`... that the policy does not allow."""
        parts = path.split(".")
        if scope.kind == "kernel" and any(clock in parts[-1] for clock in rules.KERNEL_CLOCKS):
            return self.flag_clock(node, scope, path)
        if scope.kind == "kernel" and parts[0] == "triton" and parts[1:2] == ["language"]:
            return
        if scope.kind == "kernel":
            return self.flag(node, "kernel-body", f"`{code(node)}` in @triton.jit function `{scope.node.name}` "
                             "is not triton.language; kernels use only tl.*, other @triton.jit "
                             "functions, range/tl.static_range and min/max (no torch in a kernel)")
        if parts[-1] in rules.HOST_READS:
            return self.flag_host_read(node, parts[-1])
        if parts[0] == "torch":
            internal = any(p.startswith("_") for p in parts) or path.startswith(rules.TORCH_INTERNALS)
            if self.policy.host_compute and parts[-1].startswith(rules.TORCH_STATE_SETTERS):
                return self.flag(node, "host-torch", f"`{code(node)}` changes torch's global state (seeds, "
                                 "defaults, modes), which outlives the call; leave it as the harness set it", path)
            if self.policy.host_compute and not internal and (
                    id(node) in self.called or isinstance(node, (ast.Import, ast.ImportFrom))):
                return  # torch called by name: what it computes is measured at run time
            nn_class = (self.policy.name == "external" and len(parts) == 3 and parts[1] == "nn"
                        and parts[2][:1].isupper())
            dtype_like = (self.policy.host_compute and len(parts) == 2
                          and parts[1].startswith(rules.DTYPE_PREFIXES))
            if path in self.policy.torch_names or nn_class or dtype_like:
                return
            if internal:
                return self.flag(node, "torch-internals", f"`{code(node)}` reaches torch internals; on the host "
                                 f"use only torch allocation, dtypes and read-only device queries", path)
            return self.flag(node, "host-torch", f"`{code(node)}` is torch outside the allowlist; host code may "
                             f"only {rules.HOST_TORCH_HINT}", path)
        if parts[0] == "triton" and path not in rules.TRITON_NAMES and \
                not (parts[1:2] == ["language"] and not any(p.startswith("_") for p in parts)):
            return self.flag(node, "launch-hook", f"`{code(node)}` reaches Triton's runtime; use triton.jit, "
                             "autotune, heuristics, Config, cdiv, next_power_of_2 and triton.language only", path)
        if parts[0] == "triton":
            return
        module = next((m for m in (".".join(parts[:2]), parts[0]) if m in rules.MODULE_NAMES), None)
        if module is None:  # `import collections.abc` binds `collections`, which is not allowed
            return self.flag(node, "import", f"`{code(node)}` uses `{parts[0]}`; a kernel module may use only "
                             f"{self.importable()}", path)
        names = rules.MODULE_NAMES.get(module)
        rest = parts[module.count(".") + 1:]
        if any(p.startswith("_") for p in rest) or (names is not None and rest and rest[0] not in names) or (
                module == "typing" and rest and (rest[0] == "ForwardRef" or (
                    not rest[0][:1].isupper() and rest[0] not in ("cast", "overload")))):
            allowed = ", ".join(sorted(names)) if names is not None else "its public constants and types"
            self.flag(node, "import", f"`{code(node)}` is not allowed from `{module}`; use only {allowed} "
                      "(no caches, no state that outlives a call)", path)

    def visit_Name(self, node: ast.Name, scope: Scope, readonly: bool = False) -> None:
        name = node.id
        if name == "__all__" and scope.kind == "module" and isinstance(node.ctx, ast.Store):
            return
        if dunder(name):
            return self.flag(node, "dunder", f"`{name}` is a dunder name; no introspection in a kernel "
                             "module (a self-test goes under exactly `if __name__ == \"__main__\":`, which is "
                             "removed before the check)")
        if not isinstance(node.ctx, ast.Load):
            self.check_rebinding(node, name, scope)
            if name == self.entry_point and scope.kind == "module" and id(node) not in self.entry_bindings:
                self.flag(node, "entry-point", f"`{name}` is bound at import by `{code(node)}` in a loop, "
                          f"a with, an unpacking or a walrus; define it with `def {name}(...)`")
        elif name in self.facts.kernels and scope.kind == "host":  # module level: a dispatch table
            return self.flag(node, "launch-hook", f"`{name}` keeps a @triton.jit kernel as a value; launch it "
                             f"as {name}[grid](...), or hand it straight to a launcher function")
        if name in rules.FORBIDDEN_BUILTINS and name not in self.facts.module_kinds and name not in scope.local:
            return self.flag(node, "builtin", f"`{name}` is not allowed (no getattr/setattr/eval/exec/"
                             "compile/open/type/vars/globals); refer to names directly")
        if name in self.facts.aliases and name not in scope.local:
            if name in self.facts.modules:
                return self.flag(node, "import", f"`{name}` uses a module as a value; "
                                 "refer to its allowed attributes directly")
            return self.check_path(self.facts.aliases[name], node, scope)
        kind = self.facts.module_kinds.get(name, "opaque" if name not in rules.PYTHON_BUILTINS else None)
        if scope.kind == "host" and name not in scope.local and name not in scope.outer and (
                kind == "opaque" or (kind == "table" and not readonly)):
            self.flag(node, "global-state", f"`{name}` is module-level state used from a function; "
                      "functions may only read module-level tables of constants (no caches, no "
                      "objects kept between calls)")

    def read(self, node: ast.AST, scope: Scope) -> None:
        """Visits `node` where a module-level table may be read (iterated, indexed, measured)."""
        if isinstance(node, ast.Name):
            self.visit_Name(node, scope, readonly=True)
        else:
            self.visit(node, scope)

    def visit_Attribute(self, node: ast.Attribute, scope: Scope) -> None:
        attr = node.attr
        path = facts_lib.path_of(node, self.facts.aliases)
        root = facts_lib.root_name(node)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.store_attribute(node, scope)
        if attr in rules.HOST_READS and scope.kind != "kernel":
            return self.flag_host_read(node, attr)
        if (dunder(attr) and not (attr == "__init__" and _is_super(node.value))) \
                or attr in rules.FRAME_ATTRIBUTES:
            return self.flag(node, "dunder", f"`{code(node)}` is introspection (dunders, frames); "
                             "a kernel module names what it uses directly")
        if self.check_private(node, scope):
            return
        if self.logger(node.value, scope) and attr not in rules.LOGGER_METHODS:
            return self.flag(node, "global-state", f"`{code(node)}` reaches into a logger, which outlives the call; "
                             f"use only its methods {', '.join(sorted(rules.LOGGER_METHODS))}", "logger." + attr)
        if attr in rules.LAUNCH_HOOK_ATTRIBUTES or (
                isinstance(node.value, ast.Name) and node.value.id in self.facts.kernels):
            return self.flag(node, "launch-hook", f"`{code(node)}` reaches into a kernel object or Triton's "
                             "launch machinery; launch kernels only as kernel[grid](...)")
        if path is not None and (root not in scope.local or root in self.facts.modules):
            return self.check_path(path, node, scope)
        if scope.kind == "host" and attr in self.policy.tensor_attributes and root != scope.self_name:
            why = "is this task's work (data movement)" if attr in rules.REORDERING_ATTRIBUTES else \
                "aliases a tensor's values"
            self.flag(node, "host-torch", f"`{code(node)}` on the host {why}; host code may only "
                      f"{self.host_hint()}", "." + attr)
        self.visit(node.value, scope)

    def check_private(self, node: ast.Attribute, scope: Scope) -> bool:
        """Flags `obj._x` unless `obj` is this module's own (`self`, a class of the module) and
        `_x` a member the module defines; returns True when flagged."""
        attr, value = node.attr, node.value
        if not attr.startswith("_") or dunder(attr) or facts_lib.path_of(node, self.facts.aliases) is not None:
            return False
        own = isinstance(value, ast.Name) and (value.id == scope.self_name or (
            value.id in self.facts.classes and value.id not in scope.local))
        if own and attr in self.facts.attributes:
            return False
        self.flag(node, "private", f"`{code(node)}` reaches a private attribute of an object this module "
                  "did not define (library internals, evaluation paths); use its public API", "." + attr)
        return True

    def logger(self, node: ast.AST, scope: Scope) -> bool:
        """True for the module logger or `logging.getLogger(...)`: objects that outlive every call."""
        if isinstance(node, ast.Call):
            return facts_lib.path_of(node.func, self.facts.aliases) == "logging.getLogger"
        return isinstance(node, ast.Name) and node.id in self.facts.loggers and node.id not in scope.local

    def flag_clock(self, node: ast.AST, scope: Scope, key: str) -> None:
        self.flag(node, "kernel-body", f"`{code(node)}` reads a clock inside @triton.jit function "
                  f"`{scope.node.name}`; kernels compute from their inputs only (no timers)", key)

    def flag_host_read(self, node: ast.AST, key: str | None = None) -> None:
        if self.policy.host_compute and key == "item":
            return  # a scalar read, measured at run time like any torch op
        self.flag(node, "host-read", f"`{code(node)}` reads tensor values on the host; compute in a "
                  "Triton kernel", key)

    def host_hint(self) -> str:
        """What host code may do instead, for this task (no reordering views where they are its work)."""
        if rules.REORDERING_METHODS & self.policy.tensor_methods:
            return rules.HOST_TORCH_HINT
        return rules.HOST_TORCH_HINT.replace(", transpose...", "") + \
            " (this task's work is data movement: no transposed or permuted views on the host)"

    def store_attribute(self, node: ast.Attribute, scope: Scope) -> None:
        on_self = isinstance(node.value, ast.Name) and node.value.id == scope.self_name
        if (on_self and scope.in_init) or (scope.ctx_name and getattr(node.value, "id", None) == scope.ctx_name):
            return
        if on_self:
            return self.flag(node, "global-state", f"`{code(node)}` keeps state on the instance between "
                             "calls; set attributes only in __init__")
        self.flag(node, "module-attribute-store", f"`{code(node)}` assigns an attribute the module does "
                  "not own; only `self.x = ...` in __init__ of a class defined here may")


def _is_super(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
