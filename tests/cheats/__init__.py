"""The cheat-kernel library: candidates that game a naive harness; every one must be caught.

Each file in `candidates/` starts with header lines:

    # task: vector_add
    # caught-as: policy_violation
    # second-layer: cheat_torch_compute

`caught-as` is the verdict of the whole cascade. `second-layer`, where present, is the
verdict with the static gate (a lint) switched off: what the sandboxed run and the trusted
checker catch on their own, so no cheat depends on the lint. A key with a backend's name
(`second-layer-cuda`) overrides the plain one there; `|` separates verdicts that are each
right (`none`: scored correct, and then timed honestly: its trick buys nothing there, e.g.
a cache that never hits on the judge's fresh inputs; the tests hold its latency to an
honest kernel's: its `twin:`, a file of `twins/`, or else the task's baseline).

`device: cuda` marks a mechanism that exists only on a GPU (the caching allocator's reused
blocks, CUDA graphs, `%globaltimer`): the interpreter tests list it as not applicable, and
`experiments/perf/cheat_sweep.py --device cuda` scores it. `caught-as: none` marks a
candidate whose own verdict is correct because its harm is to others (`harms:` says whom).

Grow the library whenever a new cheat is seen: add a file, and the test picks it up.
"""

import pathlib

CANDIDATES_DIR = pathlib.Path(__file__).parent / "candidates"
TWINS_DIR = pathlib.Path(__file__).parent / "twins"
"""Honest twins: a cheat's own kernel with no trick (its `twin:` header names one), what a
cheat scored correct is held to."""


def header(path: pathlib.Path) -> dict[str, str]:
    """Returns the `# key: value` lines at the top of a candidate file."""
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, value = line[2:].split(":", 1)
        fields[key.strip()] = value.strip()
    return fields


def library() -> list[pathlib.Path]:
    """Returns every cheat candidate file, sorted by name."""
    return sorted(CANDIDATES_DIR.glob("*.py"))


def applies_to(path: pathlib.Path, backend: str) -> bool:
    """Returns whether the cheat's mechanism exists on `backend` (its `device:` header,
    none for every backend)."""
    device = header(path).get("device")
    return device is None or device == backend


def expected_kinds(fields: dict, ungated: bool, backend: str) -> set[str]:
    """Returns the verdicts a cheat file promises on `backend` (empty: none for this mode);
    a `-<backend>` key (`second-layer-cuda`) overrides the plain one, `|` separates verdicts
    that are each right there."""
    key = "second-layer" if ungated else "caught-as"
    value = fields.get(f"{key}-{backend}") or fields.get(key)
    if not ungated and not value and "rule" in fields:
        value = "policy_violation"
    return set(value.split("|")) if value else set()
