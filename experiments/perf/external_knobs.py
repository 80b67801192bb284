"""How much of the external suites the offline operators can vary: knobs of each reference.

    .venv/bin/python experiments/perf/external_knobs.py ../shared/external/GEAK-eval

Prints, per suite (GEAK-eval's TritonBench-revised and ROCm), how many references have knobs
on the cuda and the rocm backend, how many knobs of each origin they hold (on cuda), and each
reference without a knob with what its launches pass instead of literals. No GPU needed: it
reads the sources (`operators.knobs.find`).
"""

from __future__ import annotations

import argparse
import ast
import collections

from benchmarks.external import load_suite
from evo.records import parse_source
from operators import knobs, offline, tables

SUITES = ("tritonbench-revised", "rocm")
BACKENDS = ("cuda", "rocm")


def origin(knob: knobs.Knob) -> str:
    """Returns where a knob comes from in the source, in words."""
    if knob.kind == "configs":
        return "autotune list: which configs are kept"
    if ".configs[" in knob.key:
        return "autotune config value"
    if knob.key.startswith(tables.TABLE + "["):
        return "per-shape table entry"
    if knob.insert == knobs.HEURISTIC_LINE:
        return "launch option of a kernel launched outside (inserted heuristics)"
    if knob.launch and knob.key.startswith(knob.launch + "."):
        return "launch keyword" + ("" if knob.present else " (absent, inserted)")
    return "assigned constant" + (" a launch passes on" if knob.launch else "")


def why_none(source: str) -> str:
    """Returns what the reference's launches pass instead of literal sizes and options."""
    tree = parse_source(source)
    launches = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name)]
    computed = [f"{kw.arg or '**'}={ast.unparse(kw.value)}" for call in launches for kw in call.keywords
                if not tables.is_int_literal(kw.value)]
    text = "; ".join(dict.fromkeys(computed)) or "no launch keyword"
    text = "computed at launch: " + (text if len(text) <= 110 else text[:107] + "...")
    return ("autotune configs not written as literals; " if "autotune(" in source else "") + text


def report(suite: str, path: str) -> None:
    tasks = load_suite(suite, path)
    with_knobs = {backend: 0 for backend in BACKENDS}
    origins: collections.Counter = collections.Counter()
    bare = {}
    for task in tasks:
        for backend in BACKENDS:
            space = offline.knob_space(task, task.baseline_source, backend)
            with_knobs[backend] += bool(space)
            if backend == "cuda":
                origins.update(origin(k) for k in knobs.find(task.baseline_source, backend) if k.key in space)
                if not space:
                    bare[task.name] = why_none(task.baseline_source)
    print(f"\n{suite}: {len(tasks)} references")
    for backend in BACKENDS:
        print(f"  with knobs on {backend}: {with_knobs[backend]} ({with_knobs[backend] / len(tasks):.0%})")
    print("  knobs on cuda, by origin:")
    for name, count in origins.most_common():
        print(f"    {count:6d}  {name}")
    print(f"  without knobs on cuda: {len(bare)}")
    for name, why in bare.items():
        print(f"    {name}: {why}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the GEAK-eval checkout")
    args = parser.parse_args()
    for suite in SUITES:
        report(suite, args.path)


if __name__ == "__main__":
    main()
