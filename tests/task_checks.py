"""Test helpers for the built-in suite: import a kernel module from its file, and check a
kernel against its task's reference the way the fitness checker does."""

import importlib.util

import torch


def import_file(path, module_name):
    """Imports a kernel module from its file (Triton's @jit reads source from the file)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mismatch(task, fn, args):
    """Returns why `fn` disagrees with the task's reference on `args`, or "" when it agrees.

    As the fitness checker: inputs must come back unchanged, and outputs match per element
    with the tolerance of the output's dtype (here without its scaling of atol by the
    output's magnitude, so this check is the stricter one); integers match exactly.
    """
    snapshot = [a.clone() for a in args]
    out = fn(*args)
    if any(not torch.equal(a, s) for a, s in zip(args, snapshot)):
        return "inputs modified"
    expected = task.reference(*snapshot)
    if out.shape != expected.shape or out.dtype != expected.dtype:
        return f"got {out.dtype} {tuple(out.shape)}, expected {expected.dtype} {tuple(expected.shape)}"
    if not expected.is_floating_point():
        return "" if torch.equal(out, expected) else "integer outputs differ"
    atol, rtol = task.tolerance[str(expected.dtype).removeprefix("torch.")]
    close = torch.isclose(out.double(), expected.double(), atol=atol, rtol=rtol)
    if close.all():
        return ""
    error = (out.double() - expected.double()).abs().max().item()
    return f"{int((~close).sum())} elements off, max error {error:.3g} over (atol={atol}, rtol={rtol})"
