"""`evo eval`: one JSON object per file; exit status 0 when every file is correct, 1 when a
file FAILED, 2 for a usage error."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from benchmarks.registry import builtin

pytestmark = pytest.mark.slow  # `evo eval` subprocesses: `make test-fast` leaves it out

EVO = [sys.executable, "-c", "from evo.cli import app; app()"]


def run_evo(*args, cwd):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run([*EVO, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_eval_prints_one_json_object_per_file_in_order(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(builtin().get("vector_add").baseline_source)
    bad = tmp_path / "bad.py"
    bad.write_text("def vector_add(x, y)\n")
    result = run_evo("eval", "vector_add", "good.py", "bad.py", "--json",
                     "--device", "interpreter", "--timeout", "30", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # bad.py FAILED
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [line["candidate"] for line in lines] == ["good.py", "bad.py"]
    assert lines[0]["correct"] is True and lines[0]["stage_reached"] == "timed"
    assert lines[0]["speedup"] > 0 and len(lines[0]["latency_us"]) == 3
    assert lines[1]["correct"] is False and lines[1]["failure_kind"] == "syntax_error"
    for field in ("candidate_id", "call_ok", "error_trace", "max_abs_err", "ref_latency_us",
                  "roofline_fraction", "device", "backend", "harness_version", "compile_s",
                  "check_s", "bench_s"):
        assert field in lines[0]


def test_eval_exits_0_when_every_file_is_correct_with_a_campaigns_stage_limits(tmp_path):
    (tmp_path / "good.py").write_text(builtin().get("vector_add").baseline_source)
    result = run_evo("eval", "vector_add", "good.py", "--device", "interpreter", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("good.py: correct"), result.stdout


def test_eval_unknown_task_is_a_usage_error(tmp_path):
    (tmp_path / "c.py").write_text("x = 1\n")
    result = run_evo("eval", "no_such_task", "c.py", "--json", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown task 'no_such_task'" in result.stderr and "vector_add" in result.stderr


def test_eval_missing_file_is_a_usage_error(tmp_path):
    result = run_evo("eval", "vector_add", "missing.py", cwd=pathlib.Path(tmp_path))
    assert result.returncode == 2
    assert "no such candidate file: missing.py" in result.stderr


def test_eval_refuses_to_score_without_a_sandbox(tmp_path, monkeypatch):
    from fitness import eval_cli

    monkeypatch.setenv("KERNELEVO_BWRAP", str(tmp_path / "no-bwrap-here"))
    (tmp_path / "c.py").write_text(builtin().get("vector_add").baseline_source)
    try:
        eval_cli.evaluate_files("vector_add", [str(tmp_path / "c.py")], device="interpreter")
    except eval_cli.UsageError as error:
        assert "bubblewrap" in str(error) and 'sandbox = "off"' in str(error)
    else:
        raise AssertionError("scored untrusted code without a sandbox")


def test_eval_without_the_sandbox_says_so_on_every_line(tmp_path, capsys):
    from fitness import eval_cli

    (tmp_path / "c.py").write_text(builtin().get("vector_add").baseline_source)
    (evaluation,) = eval_cli.evaluate_files("vector_add", [str(tmp_path / "c.py")], device="interpreter",
                                  timeout_s=30, sandbox="off")
    assert evaluation.correct and evaluation.sandboxed is False
    assert "UNSANDBOXED" in capsys.readouterr().out


def test_eval_stage_limits_default_to_a_campaigns_and_timeout_sets_one_for_every_stage():
    from evo import config as config_lib
    from fitness import eval_cli
    from fitness.settings import Limits

    campaign = config_lib.from_dict({"campaign": {"name": "x"}}).fitness.timeouts
    assert eval_cli.stage_limits(None) == campaign
    assert campaign.compile_s == 180.0  # the README's "exactly as a campaign would"
    assert eval_cli.stage_limits(30) == Limits.uniform(30)
    assert {eval_cli.stage_limits(30).compile_s, eval_cli.stage_limits(30).check_s} == {30.0}
