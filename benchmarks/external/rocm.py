"""GEAK-eval's ROCm Triton benchmark (30 kernels, pytest harnesses) as Tasks.

Layout (any of these as --path): the GEAK-eval checkout, `geak_eval/`, or the folders down to
`geak_eval/data/ROCm/data/ROCm_v1/`, which holds one `<name>.py` per kernel: kernel code, the
146-'#' separator, then pytest code. The tests fill a module-level dict `result_gold` with
each parametrization's outputs; `test_performance` / `test_save_performance_results` time
the kernel through `geak_eval.perf.ROCm.performance_utils_pytest`. The instruction file
`ROCm_eval_complex_instruct_v1.json` (beside or above that folder) lists the benchmark's
files with `target_kernel_name` and `instruction`; when present it is the task list (so
helper files in the folder, such as `check.py`, are not tasks).

Candidate contract: the candidate replaces the kernel code; the test code is appended to it
and run by pytest; `result_gold` is compared with the reference kernel's. A correct candidate
is timed by the judge on `test_performance`'s launches, recorded (`rocm_launches`).
"""

from __future__ import annotations

import pathlib

from benchmarks.external import common, rocm_launches
from evo.records import Task

SUITE = "rocm"
SUBPATHS = ("geak_eval/data/ROCm/data/ROCm_v1", "data/ROCm/data/ROCm_v1", "ROCm/data/ROCm_v1",
            "data/ROCm_v1", "ROCm_v1", "")
INSTRUCTION_FILES = ("ROCm_eval_complex_instruct_v1.json",)
NOT_CORRECTNESS_TESTS = ("test_performance", "test_save_results", "test_save_performance_results")
"""Tests GEAK-eval deselects or that only save files; the harness runs the rest."""


def load_file(path: pathlib.Path, entry: dict | None = None) -> Task:
    """Returns the Task of one ROCm benchmark file."""
    kernel, tests = common.split_geak_file(path.read_text(), str(path))
    entry = entry or {}
    defined = {function.name for function in common.top_level_functions(kernel)}
    target = entry.get("target_kernel_name")
    correctness_tests = common.harness_tests(tests, skip=NOT_CORRECTNESS_TESTS)
    timed = "test_performance" in common.harness_tests(tests)
    if not correctness_tests:
        raise ValueError(f"{path}: the test code defines no correctness test (test_* other "
                         f"than {', '.join(NOT_CORRECTNESS_TESTS)})")
    return common.geak_task(
        path, SUITE, kernel, tests, entry,
        entry_point=target if target in defined else common.pick_entry_point(kernel, tests, str(path)),
        case_names=correctness_tests,
        how_tests_run="is appended to your module and run with pytest",
        tags=("pytest",),
        untimed_reason="" if timed else f"not timed: the ROCm benchmark file {path.name} has no test_performance",
        timing_calls=rocm_launches.LaunchCalls(
            task=path.stem, kernel_names=tuple(sorted(common.launching_definitions(kernel))),
            module_source=(f"{common.portable_libdevice(kernel).rstrip()}\n\n\n{common.SEPARATOR}\n\n"
                           f"{common.portable_libdevice(tests)}")) if timed else None)


def load(path: str | None) -> list[Task]:
    """Returns the benchmark's Tasks: the instruction file's list when there is one."""
    folder = common.find_folder(path, SUITE, SUBPATHS)
    instructions = common.read_instructions(folder, INSTRUCTION_FILES)
    return [load_file(file, instructions.get(file.name))
            for file in common.geak_files(folder, SUITE, listed=instructions)]
