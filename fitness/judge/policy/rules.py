"""The lint's tables: what breaches the kernel-module contract, by name.

Denylists, short on purpose: the lint gives quick feedback on contract breaches a model
makes by habit (a self-test that reads a file, a flag flipped for speed), it is not what
keeps a candidate honest (docs/design.md, "Fitness cascade and its trust boundary").
`contract.py` renders them into the prompts' words.
"""

from __future__ import annotations

IO_MODULES = frozenset({
    "os", "pathlib", "shutil", "tempfile", "glob", "io", "fileinput", "shelve", "dbm", "sqlite3",
    "subprocess", "multiprocessing", "pty", "socket", "ssl", "select", "selectors", "http",
    "urllib", "urllib3", "requests", "httpx", "aiohttp", "ftplib", "smtplib", "xmlrpc", "webbrowser"})
"""Modules for files, processes, the environment or the network (and their submodules)."""

IO_CALLS = frozenset({"open", "torch.load", "torch.save", "numpy.load", "numpy.save", "numpy.savez",
                      "numpy.loadtxt", "numpy.savetxt", "numpy.fromfile"})
"""Calls that read or write files: the `open` builtin, and library loaders and savers."""

IMPORT_CALLS = frozenset({"__import__", "importlib.import_module"})
"""Calls that import a module by name: judged like an import of that name."""

SETTING_CALLS = frozenset({"manual_seed", "manual_seed_all", "seed", "use_deterministic_algorithms",
                           "putenv", "unsetenv"})
SETTING_PREFIX = "set"
"""Library functions that change process-wide state (`torch.set_default_dtype`,
`sys.setrecursionlimit`, `triton.runtime.driver.set_active`, the RNG seeds): by last name."""

SETTING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem",
                             "clear", "remove", "add", "discard"})
"""Mutating methods that change a library's module-level state when called on it (`sys.path.insert`)."""

DATA_MOVEMENT_TAG = "data-movement"
"""The task tag of transpose-like tasks, whose work is the reordering itself (the op audit,
fitness/judge/anticheat.py, refuses torch copies of reordering views there)."""
