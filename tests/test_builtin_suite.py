"""The built-in suite: every baseline kernel matches its reference under the interpreter,
planted bugs are caught, inputs are deterministic, launches expose their tunable knobs."""

import ast
import pickle

import pytest
import torch

from benchmarks import registry
from benchmarks.builtin import common
from task_checks import import_file, mismatch

SUITE = registry.builtin()

EXPECTED_TASKS = {
    "vector_add", "softmax", "bias_gelu", "layernorm", "rmsnorm", "row_sum", "row_argmax",
    "matmul", "batched_matmul", "flip2d", "transpose", "cumsum", "cross_entropy",
    "embedding", "flash_attention",
}
MATMUL_CLASS = {"matmul", "batched_matmul", "flash_attention"}


@pytest.fixture(scope="session")
def baselines():
    """Entry points of every trusted baseline, imported once in-process."""
    return {
        task.name: getattr(import_file(common.KERNELS_DIR / f"{task.name}.py",
                                          f"baseline_{task.name}"), task.entry_point)
        for task in SUITE.tasks()
    }


def test_suite_holds_the_fifteen_named_tasks():
    assert {task.name for task in SUITE.tasks()} == EXPECTED_TASKS
    assert all(task.entry_point == task.name and task.suite == "builtin" for task in SUITE.tasks())


def test_every_task_names_its_roofline_class():
    for task in SUITE.tasks():
        assert ("memory-bound" in task.tags) != ("compute-bound" in task.tags), task.name
        assert ("matmul" in task.tags) == (task.name in MATMUL_CLASS), task.name


def test_no_baseline_needs_a_torch_compute_op():
    assert all(task.torch_allowlist == () for task in SUITE.tasks())


def test_tasks_pickle_by_reference_for_workers():
    for task in SUITE.tasks():
        clone = pickle.loads(pickle.dumps(task))
        assert clone.reference is task.reference and clone.flops is task.flops, task.name
        params = task.interpreter_cases[0].params
        assert all(torch.equal(a, b) for a, b in zip(clone.make_inputs(params, 3, "cpu"),
                                                     task.make_inputs(params, 3, "cpu")))


@pytest.mark.parametrize("task_name,case_index", [
    (task.name, i) for task in SUITE.tasks() for i in range(len(task.interpreter_cases))
])
def test_baseline_matches_reference(baselines, task_name, case_index):
    task = SUITE.get(task_name)
    case = task.interpreter_cases[case_index]
    assert mismatch(task, baselines[task_name], task.make_inputs(case.params, 0, "cpu")) == "", case.name


@pytest.mark.parametrize("task_name", sorted(EXPECTED_TASKS))
def test_inputs_are_seeded_random_and_in_range(task_name):
    task = SUITE.get(task_name)
    for case in task.interpreter_cases:
        first = task.make_inputs(case.params, 7, "cpu")
        again = task.make_inputs(case.params, 7, "cpu")
        other = task.make_inputs(case.params, 8, "cpu")
        assert all(torch.equal(a, b) for a, b in zip(first, again)), case.name
        floats = [t for t in first if t.is_floating_point()]
        assert floats and all(t.ne(0).any() and t.isfinite().all() for t in floats), case.name
        assert any(not torch.equal(a, b) for a, b in zip(floats, other) if a.numel() > 1) \
            or all(t.numel() == 1 for t in floats), case.name
        assert all(t.ge(0).all() for t in first if not t.is_floating_point()), case.name


def test_roofline_counts_follow_the_formulas():
    matmul = SUITE.get("matmul")
    params = {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"}
    assert matmul.flops(params) == 2 * 4096 ** 3
    assert matmul.bytes(params) == 3 * 4096 * 4096 * 2
    batched = SUITE.get("batched_matmul")
    assert batched.flops({**params, "B": 3}) == 3 * 2 * 4096 ** 3
    assert batched.bytes({**params, "B": 3}) == 3 * 3 * 4096 * 4096 * 2
    softmax = SUITE.get("softmax")
    assert softmax.bytes({"M": 10, "N": 30, "dtype": "float32"}) == 2 * 10 * 30 * 4
    for task in SUITE.tasks():
        for case in task.cases:
            assert task.bytes(case.params) > 0, (task.name, case.name)
            assert (task.flops(case.params) > 0) != ("data-movement" in task.tags), task.name


def _launches(source):
    """Yields the keyword lists of every `kernel[grid](...)` launch in a module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            yield {kw.arg: kw.value for kw in node.keywords}


def _tunable(value):
    """True for a literal keyword or a read of the module's per-shape table (`config["NAME"]`)."""
    return isinstance(value, ast.Constant) or (
        isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == "config")


@pytest.mark.parametrize("task_name", sorted(EXPECTED_TASKS))
def test_baseline_launches_expose_tunable_knobs(task_name):
    launches = list(_launches(SUITE.get(task_name).baseline_source))
    assert launches, "no kernel launch found"
    for keywords in launches:
        for knob in ("num_warps", "num_stages"):
            assert _tunable(keywords.get(knob)), f"{knob} is neither a literal nor read from the table"
        assert any(name.startswith("BLOCK") for name in keywords), "no BLOCK constexpr keyword"


PLANTED_BUGS = [
    # (task, text in the baseline, replacement): each makes the kernel wrong on some case,
    # and none reads or writes out of bounds (these run in-process; a stray write crashes it).
    ("softmax", "tl.where(row_mask, tl.sum(numerator, axis=1), 1.0)",
     "tl.where(row_mask, tl.max(numerator, axis=1), 1.0)"),
    ("row_sum", "row_acc = tl.sum(acc, axis=1)", "row_acc = tl.max(acc, axis=1)"),
    ("row_argmax", "better = chunk_value > best_value", "better = chunk_value >= best_value"),
    ("layernorm", "tl.sum(centred * centred, axis=1) / N",
     "tl.sum(centred * centred, axis=1) / (N - 1)"),
    ("cumsum", "tl.cumsum(x, axis=1) + carry[:, None]", "tl.cumsum(x, axis=1)"),
    ("cross_entropy", "tl.sum(tl.exp(x - running_max[:, None]), axis=1)", "tl.sum(tl.exp(x), axis=1)"),
    ("matmul", "acc = tl.dot(a, b, acc)", "acc = tl.dot(a, b)"),
    ("flip2d", "src_rows = M - 1 - rows", "src_rows = rows"),
    ("transpose", "mask = (rows[:, None] < M)", "mask = (rows[:, None] < M - 1)"),
    ("flash_attention", "offs_m[:, None] >= offs_n[None, :]", "offs_m[:, None] > offs_n[None, :]"),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the bugs make NaNs on purpose
@pytest.mark.parametrize("task_name,original,planted", PLANTED_BUGS,
                         ids=[bug[0] for bug in PLANTED_BUGS])
def test_planted_bug_does_not_match(tmp_path, task_name, original, planted):
    task = SUITE.get(task_name)
    assert task.baseline_source.count(original) == 1, "the bug must replace exactly one place"
    path = tmp_path / f"buggy_{task_name}.py"
    path.write_text(task.baseline_source.replace(original, planted))
    buggy = getattr(import_file(path, f"buggy_{task_name}"), task.entry_point)
    verdicts = [mismatch(task, buggy, task.make_inputs(case.params, 0, "cpu"))
                for case in task.interpreter_cases]
    assert any(verdicts), f"{task_name}: the planted bug passed every interpreter case"


def test_row_sum_keeps_both_widened_tolerances():
    # Each widened_tolerance call returns every dtype; merging two must not reset the first.
    tolerance = SUITE.get("row_sum").tolerance
    assert tolerance["float32"] == (1e-4, 1.3e-6) and tolerance["float16"] == (2e-4, 1e-3)
