"""Why a TritonBench-revised reference's timing code records as "the call returns nothing and
writes no argument" on a GPU while it records on the CPU (context_attn_nopad,
context_attn_mistral, flash_decode2_llama, flash_decode2_phi on an H200, RESULTS.md §42): per
task, in this process, the recorder's verdict (`PerformanceCalls.record`), then the recorded
call of the first input run again by hand on its own arguments, with each tensor argument's
change (elements that differ, the largest difference) and what the call returned.

  PYTHONPATH=. python experiments/perf/record_probe.py --path .external/GEAK-eval \\
      --tasks context_attn_nopad,flash_decode2_phi [--device cuda]
Under the interpreter (`--device cpu`, TRITON_INTERPRET=1) it rehearses on the same files.
"""

from __future__ import annotations

import argparse
import json

import torch

from benchmarks import registry
from benchmarks.external import recorded


def probe(calls: recorded.PerformanceCalls, device: str) -> dict:
    """Returns the recorder's verdict and, on input 0, what the recorded call changes."""
    verdict = calls.record(device, 1)
    kernel, perf, definition = calls._loaded()
    made = calls._made(definition, 1, device, 1)
    name, values, keywords = calls._call(kernel, perf, definition, made[0], device, 1)
    before = [recorded._copied(value) for value in values]
    returned = recorded.keyword_call(recorded.entry_function(kernel, name), keywords)(*values)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    changes = []
    for at, (was, now) in enumerate(zip(before, values)):
        if not isinstance(was, torch.Tensor):
            changes.append({"at": at, "value": repr(was)[:40]})
            continue
        differ = (was != now) & ~(was.isnan() & now.isnan()) if was.is_floating_point() else was != now
        changes.append({"at": at, "shape": list(was.shape), "dtype": str(was.dtype),
                        "device": str(now.device), "differ": int(differ.sum()),
                        "max_abs_diff": float((now.double() - was.double()).abs().max()) if was.numel() else 0.0,
                        "same_storage_as": [other for other, value in enumerate(values) if other != at
                                            and isinstance(value, torch.Tensor)
                                            and value.untyped_storage().data_ptr()
                                            == now.untyped_storage().data_ptr()]})
    return {"verdict": {key: str(value)[:300] for key, value in verdict.items()}, "entry": name,
            "keywords": list(keywords), "returned": type(returned).__name__, "arguments": changes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="the GEAK-eval checkout")
    parser.add_argument("--tasks", required=True, help="comma-separated task names")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    suite = registry.load("tritonbench-revised", args.path)
    for name in args.tasks.split(","):
        try:
            row = probe(suite.get(name).timing_calls, args.device)
        except Exception as error:  # the suite's own code: its failure is the finding
            row = {"error": f"{type(error).__name__}: {error}"[:600]}
        print(json.dumps({"task": name, **row}), flush=True)


if __name__ == "__main__":
    main()
