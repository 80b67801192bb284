"""Hardware knowledge sheets injected into prompts, one per target, chosen by the fitness device.

A sheet is the target's facts (bandwidth, compute rates, shared memory/LDS, warp or wavefront
width, matrix instructions), then the Triton knobs of its backend, then the optimisation
principles every target shares. The markdown files beside this module hold the words.
"""

from __future__ import annotations

import functools
import pathlib
import re

SHEETS_DIR = pathlib.Path(__file__).parent

_DEVICE_PATTERNS = (
    # (regex over the device name, sheet); first match wins, so the more specific come first.
    (r"mi300x|gfx942", "mi300x"),
    (r"mi250|gfx90a", "mi250"),
    (r"h200", "h200"),
    (r"h100", "h100"),
)
_BACKEND_KNOBS = {"cuda": "triton_cuda", "rocm": "triton_rocm"}
BACKENDS = ("cuda", "rocm", "interpreter")


@functools.lru_cache(maxsize=None)
def read(name: str) -> str:
    """Returns the text of <name>.md in the sheets folder."""
    path = SHEETS_DIR / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"no knowledge sheet {path}")
    return path.read_text().strip()


def target_for(device_name: str, backend: str) -> str | None:
    """Returns the device sheet's name for `device_name` ("mi300x", "h100"...), or None if unknown.

    The interpreter has its own sheet whatever the (CPU) device is called.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    if backend == "interpreter":
        return "interpreter"
    for pattern, sheet in _DEVICE_PATTERNS:
        if re.search(pattern, device_name.lower()):
            return sheet
    return None


def sheet_for(device_name: str, backend: str) -> str:
    """Returns the knowledge sheet for a device (`device_name` as torch reports it) and backend.

    An unrecognised GPU gets its backend's knobs and the shared principles only: better no
    numbers than wrong ones.
    """
    target = target_for(device_name, backend)
    parts = [read(target)] if target else [f"# Target: {device_name or 'unknown GPU'} ({backend})"]
    if backend in _BACKEND_KNOBS:
        parts.append(read(_BACKEND_KNOBS[backend]))
    parts.append(read("principles"))
    return "\n\n".join(parts) + "\n"
