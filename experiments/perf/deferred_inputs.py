"""Whether TritonBench-revised's timing files make input k with the inputs before it on the
meta device (`recorded.PerformanceCalls._made`, external-harness-26), and what that saves.

For every task with a usable performance file: input k made the whole way (every input
before it made for real, as before) and made with those on the meta device, each timed;
"same" where the second ran and its tensors have the first's shapes and dtypes, "falls back"
where the meta device could not make it (`_made` then makes it the whole way), "DIFFERENT"
where it made something else (a bug). Values differ by design: another stream of the same
salted seeds.

    python3 experiments/perf/deferred_inputs.py --path .external/GEAK-eval --input 3
    python3 experiments/perf/deferred_inputs.py --path .external/GEAK-eval --input last --tasks a,b

On this machine's CPU (TRITON_INTERPRET is not needed: nothing is launched) the timings say
how much of the host's work the meta device saves; on a GPU the inputs are drawn there.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

from benchmarks import registry  # noqa: E402
from benchmarks.external import recorded  # noqa: E402


def signature(value) -> list:
    """The shapes and dtypes of an input's tensors, the rest as text."""
    return [(tuple(leaf.shape), leaf.dtype) if isinstance(leaf, torch.Tensor) else repr(leaf)[:40]
            for leaf in tree_leaves(value)]


def timed(make) -> tuple[list, float]:
    began = time.perf_counter()
    made = make()
    return made, (time.perf_counter() - began) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", required=True, help="GEAK-eval's checkout")
    parser.add_argument("--input", default="3", help="the input made: an index, or 'last'")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    wanted = {name for name in args.tasks.split(",") if name}
    counts, saved = collections.Counter(), []
    for task in registry.load("tritonbench-revised", args.path).tasks():
        calls = task.timing_calls
        if (wanted and task.name not in wanted) or calls is None:
            continue
        try:
            definition = calls._loaded()[2]
            count = (len(calls._run_maker(definition, 7, args.device, None, True, deferred=False))
                     if args.input == "last" else int(args.input) + 1)  # one input held at a time
            whole, whole_ms = timed(lambda: calls._run_maker(definition, 7, args.device, count, True,
                                                             deferred=False))
        except Exception as error:  # the timing file's own failure here: not this change's
            counts["the whole way fails"] += 1
            print(f"{task.name}: the whole way fails: {error!r:.120}")
            continue
        if len(whole) < count:
            counts["fewer inputs"] += 1
            continue
        try:
            deferred, deferred_ms = timed(lambda: calls._run_maker(definition, 7, args.device, count, True,
                                                                   deferred=True))
            made = len(deferred) == count and recorded._meta_free(deferred[-1])
        except Exception as error:
            made, why = False, repr(error)[:120]
        else:
            why = "it holds a meta tensor"
        if not made:
            counts["falls back"] += 1
            print(f"{task.name}: falls back: {why}")
        elif signature(deferred[-1]) != signature(whole[-1]):
            counts["DIFFERENT"] += 1
            print(f"{task.name}: DIFFERENT: {signature(whole[-1])[:3]} against {signature(deferred[-1])[:3]}")
        else:
            counts["same"] += 1
            saved.append((whole_ms, deferred_ms))
            print(f"{task.name}: same; input {count - 1} the whole way {whole_ms:.1f} ms, "
                  f"deferred {deferred_ms:.1f} ms", flush=True)
    print(dict(counts))
    if saved:
        print(f"summed over the 'same': the whole way {sum(w for w, _ in saved):.0f} ms, "
              f"deferred {sum(d for _, d in saved):.0f} ms")


if __name__ == "__main__":
    main()
