"""`evo eval`'s words on bad files: the stage named as the cascade names it, the file and
line of a syntax error, the functions a module defines instead of its entry point, and the
cases a mismatch got wrong with their errors. Run as a user would, in a subprocess."""

import json
import os
import subprocess
import sys

import pytest

from benchmarks.builtin import common

pytestmark = pytest.mark.slow  # `evo eval` subprocesses: `make test-fast` leaves them out

EVO = [sys.executable, "-c", "from evo.cli import app; app()"]

_SUM = "(x + y).to(out_ptr.dtype.element_ty)"  # the vector_add baseline's stored value


def _baseline_storing(value: str) -> str:
    """Returns the vector_add baseline storing `value` instead of x + y at each offset."""
    baseline = common.baseline_source("vector_add")
    assert _SUM in baseline, f"the vector_add baseline no longer stores {_SUM}"
    return baseline.replace(_SUM, f"({value}).to(out_ptr.dtype.element_ty)")


BAD_FILES = {
    "syntax.py": "import torch\n\n\ndef vector_add(x, y:\n    return x + y\n",
    "gate.py": "import os\nimport torch\n\n\ndef vector_add(x, y):\n    os.getpid()\n    return x + y\n",
    "wrong_name.py": "import torch\n\n\ndef vector_sum(x, y):\n    return x + y\n\n\n"
                     "def helper():\n    return None\n",
    # the only name close to the entry point is private: a helper, never what to rename
    "private_near_name.py": "import torch\n\n\ndef _vector_addx(x, y):\n    return x + y\n\n\n"
                            "def launch(x, y):\n    return _vector_addx(x, y)\n",
    # right on the first block of 1024 elements, wrong past it: N=1 passes, N=1025 and N=3000 fail
    "past_first_block.py": _baseline_storing("tl.where(offsets < 1024, x + y, x - y)"),
    # as above, and NaN in the blocks bounded past 2048 elements: N=3000 fails with another kind
    "then_nan.py": _baseline_storing("tl.where(offsets < 1024, x + y, "
                                     "tl.where(bound > 2048, float('nan'), x - y))"),
}


def _evo_eval(tmp_path, *options):
    paths = [f"cands/{name}" for name in BAD_FILES]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    result = subprocess.run([*EVO, "eval", "vector_add", *paths, "--device", "interpreter",
                             "--timeout", "60", *options], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr  # every file FAILED
    return dict(zip(paths, [line for line in result.stdout.splitlines() if line.strip()]))


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """Each bad file's summary line and JSON object, by the path given on the command line."""
    root = tmp_path_factory.mktemp("eval_messages")
    (root / "cands").mkdir()
    for name, source in BAD_FILES.items():
        (root / "cands" / name).write_text(source)
    lines = _evo_eval(root)
    objects = {path: json.loads(line) for path, line in _evo_eval(root, "--json").items()}
    return {path: (lines[path], objects[path]) for path in lines}


def test_a_gate_refusal_is_reported_at_the_gate_stage(verdicts):
    line, record = verdicts["cands/gate.py"]
    assert line.startswith("cands/gate.py: FAILED policy_violation at stage gate: line 1: [io]")
    assert "at stage syntax" not in line
    assert record["stage"] == "gate" and record["failure_kind"] == "policy_violation"


def test_a_syntax_error_names_the_file_as_given_and_the_line(verdicts):
    line, record = verdicts["cands/syntax.py"]
    assert line.startswith("cands/syntax.py: FAILED syntax_error at stage syntax: SyntaxError:")
    assert line.endswith("(cands/syntax.py, line 4)")
    assert record["error_trace"].startswith('  File "cands/syntax.py", line 4\n    def vector_add(x, y:')
    assert "<unknown>" not in record["error_trace"] and record["stage"] == "syntax"


def test_a_wrong_entry_point_name_lists_the_functions_found(verdicts):
    line, record = verdicts["cands/wrong_name.py"]
    assert "FAILED missing_entry_point at stage import" in line
    assert record["error_trace"] == ("the module defines no function 'vector_add', the task's "
                                     "entry point; its top-level functions and classes: "
                                     "vector_sum, helper; did you mean 'vector_sum'?")


def test_a_missing_entry_point_suggests_no_private_name(verdicts):
    _, record = verdicts["cands/private_near_name.py"]
    assert record["error_trace"] == ("the module defines no function 'vector_add', the task's "
                                     "entry point; its top-level functions and classes: "
                                     "_vector_addx, launch")


def test_a_mismatch_names_the_wrong_cases_with_their_errors(verdicts):
    line, record = verdicts["cands/past_first_block.py"]
    assert "FAILED mismatch at stage correct: wrong on 2 of 3 cases ('N=1025 fp32', 'N=3000 bf16')" in line
    assert record["case_names"] == ["N=1 fp32", "N=1025 fp32", "N=3000 bf16"]
    assert record["max_abs_err"][0] == 0.0 and record["rel_err"][0] == 0.0
    assert all(error > 0.01 for error in record["max_abs_err"][1:] + record["rel_err"][1:])
    assert record["correct"] is False and record["call_ok"] is True


def test_a_mismatch_stays_the_verdict_when_a_later_case_fails_otherwise(verdicts):
    line, record = verdicts["cands/then_nan.py"]
    assert record["failure_kind"] == "mismatch" and record["stage"] == "correct"
    assert record["error_trace"].startswith("wrong on 1 of 3 cases ('N=1025 fp32') (the other cases "
                                            "were not all checked: a call failed with nan); case 'N=1025 fp32': ")
    assert record["max_abs_err"][0] == 0.0 and record["max_abs_err"][1] > 0.0  # 2|y| at one element
    assert record["max_abs_err"][2] is None  # not checked: null in JSON
    assert "FAILED mismatch at stage correct: wrong on 1 of 3 cases" in line
