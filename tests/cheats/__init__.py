"""The cheat-kernel library: candidates that game a naive harness; every one must be caught.

Each file in `candidates/` starts with header lines:

    # task: vector_add
    # caught-as: policy_violation
    # second-layer: cheat_torch_compute

`caught-as` is the verdict of the whole cascade. `second-layer`, where present, is the
verdict with the static gate switched off: what the sandboxed run and the trusted checker
catch on their own, so no cheat depends on a single layer. A key with a backend's name
(`second-layer-cuda`) overrides the plain one there; `|` separates verdicts that are each
right (`none`: scored correct, its timed runs honest on that backend).

`device: cuda` marks a mechanism that exists only on a GPU (the caching allocator's reused
blocks, CUDA graphs, `%globaltimer`): the interpreter tests list it as not applicable, and
`experiments/perf/cheat_sweep.py --device cuda` scores it. `caught-as: none` marks a
candidate whose own verdict is correct because its harm is to others (`harms:` says whom).

Grow the library whenever a new cheat is seen: add a file, and the test picks it up.
"""

import pathlib

CANDIDATES_DIR = pathlib.Path(__file__).parent / "candidates"


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
