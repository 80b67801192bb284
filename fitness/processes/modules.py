"""Importing a module from a source file under a name of its own: how the worker loads a
candidate, the external harness its files and the checker a baseline. From a file, because
Triton's @jit reads its kernels' source from the file they live in."""

from __future__ import annotations

import contextlib
import importlib.util
import sys


def import_file(path: str, name: str, watch=contextlib.nullcontext):
    """Returns the module of `path`, registered as `name` in sys.modules; its top level runs
    inside `watch()` (the worker's stall watch) and may raise anything."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with watch():
        spec.loader.exec_module(module)
    return module
