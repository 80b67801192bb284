"""Results you can use: `evo report` names each task's best candidate (by speedup where timing
means something, by correctness on the interpreter, saying so), and `evo export` writes it, or
any candidate by id, to a file that `evo eval` scores again."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import campaign_processes
from evo import campaign, cli, config as config_lib
from synthetic_results import evaluation, example_campaign, write_campaign

ROOT = Path(__file__).resolve().parents[1]


def _evo(*args):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return example_campaign(tmp_path_factory.mktemp("export") / "c")


def test_report_names_the_fastest_correct_candidate_where_timing_is_meaningful(synthetic):
    result = _evo("report", synthetic, "--json")
    assert result.exit_code == 0, result.output
    chosen = json.loads(result.stdout)["best_candidates"]
    add = chosen["add"]  # GPU rows: 1.0x seed, 1.5x (island 0 gen 1), 2.5x (island 1 gen 2)
    assert (add["candidate_id"], add["generation"], add["island"]) == ("add-1-2-optimizer-2.5-True",
                                                                      2, 1)
    assert (add["ranked_by"], add["speedup"]) == ("speedup", 2.5)
    softmax = chosen["softmax"]  # its one correct row timed on the interpreter: 0.5x
    assert (softmax["ranked_by"], softmax["speedup"]) == ("correctness", None)
    assert softmax["ranking"] == "by correctness; timing not meaningful here"
    assert chosen["matmul"] is None  # nothing correct


def test_report_table_crowns_no_interpreter_winner(synthetic):
    result = _evo("report", synthetic)
    assert result.exit_code == 0, result.output
    table = result.stdout[result.stdout.index("Best candidate per task"):]
    table = table[:table.index("Suite")]
    add = next(line for line in table.splitlines() if "│ add " in line)
    assert "add-1-2-opti" in add and "2.50x" in add and "by speedup" in add
    softmax = next(line for line in table.splitlines() if "│ softmax " in line)
    assert "n/a (interpreter)" in softmax and "0.50x" not in softmax
    assert "by correctness; timing not meaningful here" in softmax
    assert "no correct candidate" in next(line for line in table.splitlines() if "matmul" in line)
    assert f"evo export {synthetic} --task TASK" in " ".join(table.split())


def test_export_errors_name_the_problem(synthetic, tmp_path):
    def error(*args):
        result = _evo("export", *args)
        assert result.exit_code == 2, result.output
        return result.output.strip()

    assert error(synthetic) == ("error: the campaign has 3 tasks (add, matmul, softmax): name "
                                "one with --task, or a candidate with --candidate ID")
    assert error(synthetic, "--task", "nope") == (
        "error: unknown task 'nope': this campaign's tasks are add, matmul, softmax")
    assert "no candidate has an id starting with 'zz'" in error(synthetic, "--candidate", "zz")
    ambiguous = error(synthetic, "--candidate", "add-0")
    assert ambiguous.startswith("error: 3 candidates match 'add-0'") and "more characters" in ambiguous
    assert "task matmul has no correct candidate" in error(synthetic, "--task", "matmul")
    assert error(tmp_path) == f"error: {tmp_path} holds no campaign results (no campaign.json)"
    assert error(tmp_path / "missing") == f"error: no results folder at {tmp_path / 'missing'}"
    write_campaign(tmp_path / "sweep" / "cell-a", [])
    assert "no cell has evaluation rows yet" in error(tmp_path / "sweep")
    assert "has no evaluations yet" in error(tmp_path / "sweep" / "cell-a")


def test_export_of_a_sweep_folder_writes_the_best_over_every_cell_and_names_it(tmp_path):
    sweep = tmp_path / "sweep"
    for cell, speedup in (("islands-1", 1.5), ("islands-2", 2.5), ("islands-3", 2.0)):
        row = evaluation("add", 0, 1, call_ok=True, correct=True, speedup=speedup)
        row["source"] = f"# the {cell} kernel\n"
        write_campaign(sweep / cell, [row], islands=1, name=cell)
    out = tmp_path / "best.py"
    result = _evo("export", sweep, "--task", "add", "--out", out)
    assert result.exit_code == 0, result.output
    assert out.read_text() == "# the islands-2 kernel\n"
    assert result.stdout.splitlines() == [
        f"wrote {out}: add candidate add-0-1-opti (cell islands-2, generation 1, island 0, "
        "optimizer, speedup 2.50x, by speedup (fastest correct))",
        f"score it again with: evo eval add {out}"]
    unknown = _evo("export", sweep, "--task", "nope")
    assert unknown.exit_code == 2 and "this sweep's tasks are add" in unknown.output


def test_export_by_id_writes_that_candidates_source(tmp_path):
    rows = [evaluation("add", 0, 0, call_ok=True, correct=True, speedup=1.0, operator="seed"),
            evaluation("add", 0, 1, call_ok=True)]
    rows[1]["source"] = "def add(x, y):\n    return x  # wrong\n"
    folder = write_campaign(tmp_path / "c", rows, islands=1)
    out = tmp_path / "picked.py"
    result = _evo("export", folder, "--candidate", "add-0-1", "--out", out)
    assert result.exit_code == 0, result.output
    assert out.read_text() == rows[1]["source"]
    assert result.stdout.splitlines() == [
        f"wrote {out}: add candidate add-0-1-opti (generation 1, island 0, optimizer, speedup "
        "n/a (not correct: mismatch))", f"score it again with: evo eval add {out}"]


@pytest.mark.slow  # a campaign and an `evo eval` run
def test_best_of_an_interpreter_campaign_exports_to_a_file_evo_eval_scores_correct(
        interpreter_fitness, tmp_path):
    config_path = tmp_path / "tiny.toml"
    config_path.write_text(campaign_processes.offline_config("export", 3, 2))
    out = tmp_path / "run"
    campaign.run_campaign(config_lib.load(config_path), out, fitness_actors=interpreter_fitness)
    report = _evo("report", out, "--json")
    assert report.exit_code == 0, report.output
    chosen = json.loads(report.stdout)["best_candidates"]["vector_add"]
    assert chosen["ranked_by"] == "correctness" and chosen["generation"] == 2

    exported = _evo("export", out)  # one task: no --task needed
    assert exported.exit_code == 0, exported.output
    path = out / "exported" / f"vector_add-{chosen['candidate_id'][:12]}.py"
    assert exported.stdout.splitlines() == [
        f"wrote {path}: vector_add candidate {chosen['candidate_id'][:12]} (generation 2, island "
        f"{chosen['island']}, {chosen['operator']}, speedup n/a (interpreter), by correctness; "
        "timing not meaningful here)", f"score it again with: evo eval vector_add {path}"]

    scored = subprocess.run([sys.executable, "-m", "evo", "eval", "vector_add", str(path),
                             "--device", "interpreter", "--json"], cwd=ROOT, text=True,
                            capture_output=True, timeout=300)
    assert scored.returncode == 0, scored.stderr[-3000:]
    verdict = json.loads(scored.stdout.strip().splitlines()[-1])
    assert verdict["correct"] is True, verdict
    assert verdict["candidate_id"] == chosen["candidate_id"]  # the very candidate, unchanged
