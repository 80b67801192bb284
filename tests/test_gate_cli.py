"""`evo gate`: the lint alone, one line or JSON object per file, exit 1 when one is refused."""

import json
import pathlib
import subprocess
import sys

import pytest

import cheats
import external_suites
from benchmarks import registry

EVO = [sys.executable, "-c", "from evo.cli import app; app()"]
ROOT = pathlib.Path(__file__).parent
EXTERNAL = ROOT / "fixtures" / "external"
CHEAT = pathlib.Path(cheats.__file__).parent / "gate" / "open_proc_self.py"


def run_evo(*args, cwd=ROOT):
    return subprocess.run([*EVO, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _lines(result):
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_gate_prints_one_json_line_per_file_and_fails_on_a_refusal(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(registry.builtin().get("vector_add").baseline_source)
    result = run_evo("gate", "vector_add", str(good), str(CHEAT), "--json")
    assert result.returncode == 1, result.stderr
    first, second = _lines(result)
    assert (first["candidate"], first["task"], first["allowed"], first["violation"]) == \
        (str(good), "vector_add", True, None)
    assert second["allowed"] is False and second["violation"].startswith("line 20: [io]")
    assert first["ms"] < 1000


@pytest.mark.slow
def test_gate_text_output_and_exit_zero_when_all_pass():
    honest = sorted((ROOT / "fixtures" / "honest_gate").glob("vector_add_*.py"))
    result = run_evo("gate", "vector_add", *map(str, honest))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [f"{p}: allowed (vector_add)" for p in honest]


def test_gate_never_imports_the_candidate(tmp_path):
    bomb = tmp_path / "bomb.py"
    bomb.write_text("raise SystemExit('imported')\n")
    result = run_evo("gate", "vector_add", str(bomb))
    assert "imported" not in result.stdout + result.stderr and result.returncode == 0


@pytest.mark.slow
def test_gate_usage_errors():
    assert run_evo("gate", "no_such_task", str(CHEAT)).returncode == 2
    assert run_evo("gate", "vector_add", "missing.py").returncode == 2
    assert run_evo("gate", "vector_add", str(CHEAT), "--references").returncode == 2


def test_gate_references_of_a_small_suite():
    result = run_evo("gate", "--references", "--suite", "rocm", "--path", str(EXTERNAL / "rocm"), "--json")
    lines = _lines(result)
    assert result.returncode == 0 and lines and all(line["allowed"] for line in lines), result.stdout
    assert {line["task"] for line in lines} == {t.name for t in registry.load("rocm", str(EXTERNAL / "rocm")).tasks()}


@pytest.mark.slow
def test_every_geak_reference_is_admitted_as_a_candidate_of_its_own_task():
    geak = str(external_suites.suite("GEAK-eval"))
    counts = {}
    for suite in ("tritonbench-revised", "rocm"):
        result = run_evo("gate", "--references", "--suite", suite, "--path", geak, "--json")
        lines = _lines(result)
        counts[suite] = (sum(line["allowed"] for line in lines), len(lines))
    assert counts == {"tritonbench-revised": (184, 184), "rocm": (31, 31)}, counts


@pytest.mark.slow
def test_gate_refuses_a_file_that_does_not_parse(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def vector_add(x, y)\n")
    result = run_evo("gate", "vector_add", str(broken), "--json")
    (line,) = _lines(result)
    assert result.returncode == 1 and line["rule"] == "syntax" and line["line"] == 1
