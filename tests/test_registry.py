"""The registry accepts the built-in suite and rejects malformed tasks with a clear message."""

import dataclasses

import pytest

from benchmarks import registry
from benchmarks.builtin import vector_add
from evo.records import Case

GOOD = vector_add.TASK


def _rejects(message, **changes):
    with pytest.raises(registry.TaskError) as caught:
        registry.validate(dataclasses.replace(GOOD, **changes))
    assert str(caught.value).startswith("task 'vector_add': ")
    assert message in str(caught.value)


def test_builtin_suite_loads_and_validates():
    suite = registry.load("builtin")
    assert len(suite) == 15 and "softmax" in suite
    assert registry.load().get("matmul").entry_point == "matmul"
    assert all(registry.validate(task) is task for task in suite.tasks())


def test_missing_entry_point_is_named():
    _rejects("baseline_source does not define the entry point 'vector_add'",
             baseline_source="def vector_sum(x, y):\n    return x\n")


def test_unparsable_baseline_is_rejected():
    _rejects("baseline_source does not parse", baseline_source="def vector_add(:\n")


def test_fewer_than_three_cases_is_rejected():
    _rejects("cases has 2 cases; at least 3 are required", cases=GOOD.cases[:2])
    _rejects("interpreter_cases has 1 cases; at least 3 are required",
             interpreter_cases=GOOD.interpreter_cases[:1])


def test_only_power_of_two_sizes_is_rejected():
    powers = tuple(Case(f"N={n}", {"N": n, "dtype": "float32"}) for n in (1, 64, 1024))
    _rejects("interpreter_cases has only power-of-two sizes; add a non-power-of-two case",
             interpreter_cases=powers)


def test_duplicate_case_names_are_rejected():
    twins = tuple(Case("same", {"N": n, "dtype": "float32"}) for n in (3, 5, 7))
    _rejects("interpreter_cases has duplicate case names", interpreter_cases=twins)


def test_dtype_without_tolerance_is_rejected():
    fp32_only = {"float32": (1e-4, 1e-4)}
    _rejects("dtype 'bfloat16' has no tolerance entry (tolerance has ['float32'])",
             tolerance=fp32_only)
    _rejects("case 'N=2^24+1 bf16' uses dtype 'bfloat16' with no tolerance entry",
             tolerance=fp32_only, dtypes=("float32",))


def test_case_dtype_missing_from_dtypes_is_rejected():
    _rejects("case 'N=2^24+1 bf16' uses dtype 'bfloat16', which dtypes ['float32'] does not list",
             dtypes=("float32",))


def test_malformed_tolerance_is_rejected():
    _rejects("tolerance['float32'] is (-0.001, 0.0001); expected (atol, rtol), finite and >= 0",
             tolerance={**GOOD.tolerance, "float32": (-1e-3, 1e-4)})
    _rejects("tolerance['float32'] is 0.001", tolerance={**GOOD.tolerance, "float32": 1e-3})


@pytest.mark.parametrize("difficulty", [0, 6, 2.5, True])
def test_bad_difficulty_is_rejected(difficulty):
    _rejects(f"difficulty {difficulty!r} is not an integer in 1..5", difficulty=difficulty)


def test_non_finite_roofline_is_rejected():
    _rejects("flops('N=2^24 fp32') returned nan; expected a finite number >= 0",
             flops=_nan_flops)


def _nan_flops(params):
    return float("nan")


def test_missing_reference_is_rejected():
    _rejects("needs a PyTorch reference or a harness", reference=None)


def test_registering_a_name_twice_is_rejected():
    with pytest.raises(registry.TaskError, match="task 'vector_add' is registered twice"):
        registry.Registry([GOOD, GOOD])


def test_unknown_task_lists_known_names():
    suite = registry.builtin()
    with pytest.raises(registry.UnknownTaskError) as caught:
        suite.get("softmaxx")
    message = str(caught.value)
    assert message.startswith("unknown task 'softmaxx'; known tasks: ")
    assert all(task.name in message for task in suite.tasks())
