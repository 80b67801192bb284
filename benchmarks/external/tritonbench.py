"""GEAK-eval's TritonBench-revised (184 kernels) as Tasks.

Layout (any of these as --path): the GEAK-eval checkout, `geak_eval/`, or the folders down to
`geak_eval/data/TritonBench/data/TritonBench_G_v1/`, which holds one `<name>.py` per kernel:
kernel code, the 146-'#' separator, then test code that defines a `test_*()` function
returning its outputs (a dict of tensors, arrays, tuples, numbers) and, at top level,
`result_gold = test_*()`. The optional instruction file
`TritonBench_G_comp_alpac_v1_fixed_with_difficulty.json` (beside or above that folder) gives
each file's instruction and difficulty.

Candidate contract: the candidate replaces the kernel code; the test code runs in the
candidate module's namespace; its `result_gold` is compared with the reference kernel's.
A correct candidate is timed on the inputs of the task's performance file (`geak_perf`:
GEAK-eval keeps them under `performance_metrics/perf_G/`), its calls recorded (`recorded`)
so that the judge makes the inputs and holds the clock.
"""

from __future__ import annotations

import pathlib

from benchmarks.external import common, geak_perf, recorded
from evo.records import Task

SUITE = "tritonbench-revised"
SUBPATHS = ("geak_eval/data/TritonBench/data/TritonBench_G_v1", "data/TritonBench/data/TritonBench_G_v1",
            "TritonBench/data/TritonBench_G_v1", "data/TritonBench_G_v1", "TritonBench_G_v1", "")
INSTRUCTION_FILES = ("TritonBench_G_comp_alpac_v1_fixed_with_difficulty.json",)


def load_file(path: pathlib.Path, entry: dict | None = None) -> Task:
    """Returns the Task of one TritonBench-revised file."""
    kernel, tests = common.split_geak_file(path.read_text(), str(path))
    kernel = common.with_test_imports(kernel, tests)
    perf_harness, untimed_reason = geak_perf.load(path.parent, path.stem)
    timing_calls = None if perf_harness is None else recorded.PerformanceCalls(
        task=path.stem, kernel_stem=path.stem, kernel_source=common.portable_libdevice(kernel),
        perf_source=perf_harness)
    return common.geak_task(
        path, SUITE, kernel, tests, entry or {},
        entry_point=common.pick_entry_point(kernel, tests, str(path)),
        case_names=common.harness_tests(tests) or ["result_gold"],
        how_tests_run="runs in your module's namespace",
        perf_harness=perf_harness, untimed_reason=untimed_reason, timing_calls=timing_calls)


def load(path: str | None) -> list[Task]:
    """Returns every kernel file's Task (the instruction file only annotates them)."""
    folder = common.find_folder(path, SUITE, SUBPATHS)
    instructions = common.read_instructions(folder, INSTRUCTION_FILES)
    return [load_file(file, instructions.get(file.name))
            for file in common.geak_files(folder, SUITE)]
