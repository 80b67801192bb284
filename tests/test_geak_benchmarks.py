"""GEAK's tables from one command (experiments/geak_benchmarks.py): its task choice and
campaign configs here, and the whole command on the TritonBench-revised fixture suite under
the interpreter: direct prompting from a recorded-generations file, the offline arm on
independent islands, then the tables."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

import pandas as pd
import pytest

from evo import config as config_lib

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURE_SUITE = ROOT / "tests" / "fixtures" / "external" / "tritonbench"
GENERATIONS = ROOT / "tests" / "fixtures" / "recorded_generations" / "tritonbench_g.jsonl"
COMMAND = ROOT / "experiments" / "geak_benchmarks.py"


def _command_module():
    spec = importlib.util.spec_from_file_location("geak_benchmarks", COMMAND)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tasks_per_level_keeps_the_first_of_each_difficulty_that_runs_on_the_device():
    command = _command_module()
    every = command.runnable_tasks(str(FIXTURE_SUITE), ["tritonbench-revised"], "interpreter", None)
    one_each = command.runnable_tasks(str(FIXTURE_SUITE), ["tritonbench-revised"], "interpreter", 1)
    # fnuz_cast runs only on ROCm; scale_shift (level 1) and row_max (level 3) run here
    assert every == {"tritonbench-revised": ["scale_shift", "row_max"]}
    assert one_each == every  # one task a level already


def test_tasks_keeps_only_those_named_and_refuses_a_name_no_suite_has():
    command = _command_module()
    assert command.runnable_tasks(str(FIXTURE_SUITE), ["tritonbench-revised"], "interpreter",
                                  None, ["row_max"]) == {"tritonbench-revised": ["row_max"]}
    with pytest.raises(SystemExit, match="--tasks: no task row_mix in tritonbench-revised"):
        command.runnable_tasks(str(FIXTURE_SUITE), ["tritonbench-revised"], "interpreter",
                               None, ["row_max", "row_mix"])


def test_its_campaign_configs_load_as_written(tmp_path):
    command = _command_module()
    args = type("Args", (), {"device": "interpreter", "workers": 2, "spares": None})()
    text = command.campaign_config("direct-m", "tritonbench-revised", str(FIXTURE_SUITE), ["scale_shift"],
                                   {"generations": 0, "islands": 1, "offspring": 1},
                                   {"generations_from": str(GENERATIONS)}, args, 60.0,
                                   seed_with_baseline=False)
    (tmp_path / "c.toml").write_text(text)
    loaded = config_lib.load(tmp_path / "c.toml")
    assert loaded.campaign.tasks == ("scale_shift",) and not loaded.campaign.seed_with_baseline
    assert loaded.operators.generations_from == str(GENERATIONS)
    assert loaded.search.migration_interval == 0 and loaded.budget.max_wall_seconds == 60
    assert loaded.fitness.spares is None  # half the workers, unless --spares says
    args.spares = 4
    (tmp_path / "s.toml").write_text(command.campaign_config(
        "direct-m", "tritonbench-revised", str(FIXTURE_SUITE), ["scale_shift"], {"generations": 0},
        {"generations_from": str(GENERATIONS)}, args, 60.0, seed_with_baseline=False))
    assert config_lib.load(tmp_path / "s.toml").fitness.spares == 4


def test_a_campaign_that_ended_on_its_own_is_done_and_one_stopped_or_killed_resumes(tmp_path):
    command = _command_module()

    def folder(name: str, stop) -> pathlib.Path:
        (tmp_path / name).mkdir()
        (tmp_path / name / "campaign.json").write_text(json.dumps({"config": {}, "stop": stop}))
        return tmp_path / name

    assert command.finished(folder("every", {"stopped_by": None, "reason": "completed after generation 3"}))
    assert command.finished(folder("cap", {"stopped_by": "max_wall_seconds", "reason": "cap"}))
    assert not command.finished(folder("term", {"stopped_by": "SIGTERM", "reason": "signal"}))
    assert not command.finished(folder("fatal", {"stopped_by": "fatal", "reason": "disk full"}))
    assert not command.finished(folder("killed", None))
    assert not command.finished(tmp_path / "never-started")


def test_a_resumed_call_runs_no_finished_campaign_and_starts_none_past_its_end(tmp_path, capsys):
    command = _command_module()
    done = tmp_path / "search-rocm"
    done.mkdir()
    (done / "campaign.json").write_text(json.dumps({"stop": {"stopped_by": None}}))
    assert command.run_campaign(tmp_path, "search-rocm", "[campaign]\n", resume=True) == done
    assert "ended in an earlier call, left as it is" in capsys.readouterr().out
    command.run_campaign(tmp_path, "search-x", "[campaign]\n", resume=True, deadline=time.monotonic() - 1)
    assert "not started, this call's time is up" in capsys.readouterr().out
    assert not (tmp_path / "search-x").exists() and command.rows(tmp_path / "search-x") == 0


def test_the_suite_path_is_written_relative_to_the_repository_so_a_resume_moves(tmp_path):
    command = _command_module()
    assert command.portable(str(FIXTURE_SUITE)) == "tests/fixtures/external/tritonbench"
    assert command.portable(str(tmp_path)) == str(tmp_path.resolve())


def test_table_2_stands_beside_geak_eval_s_verdicts_on_the_same_replies_by_level(tmp_path):
    from synthetic_results import evaluation, write_campaign

    command = _command_module()
    replies = [evaluation("scale_shift", 0, 0, call_ok=True, correct=True, speedup=2.0,
                          operator="generator", difficulty=1),
               evaluation("row_max", 0, 0, call_ok=True, operator="generator", difficulty=3)]
    direct = {model: write_campaign(tmp_path / model, replies, islands=1,
                                    tasks=("scale_shift", "row_max")) for model in ("m1", "m2")}
    verdicts = tmp_path / "llm_corpus.json"  # GEAK-eval solved both of m1's replies; no m2
    verdicts.write_text(json.dumps({"rows": [
        {"model": "m1", "task": task, "row": 0, "done": True, "geak_call": True,
         "geak_exec": True, "project_call": True, "project_correct": task == "scale_shift",
         "agree": task == "scale_shift"} for task in ("scale_shift", "row_max")]}))

    lines = command.beside_geak_eval(direct, [str(verdicts)], str(FIXTURE_SUITE)).splitlines()
    cells = {tuple(cell.strip() for cell in line.strip("|").split("|"))[:2]:
             [cell.strip() for cell in line.strip("|").split("|")][2:] for line in lines[2:]}
    assert cells[("m1", "1")][:4] == ["1", "100.0", "100.0", "100.0"]  # tasks, exec, GEAK exec, call
    assert cells[("m1", "3")][:5] == ["1", "0.0", "100.0", "100.0", "100.0"]
    assert cells[("m1", "all")][:2] == ["2", "50.0"] and cells[("m1", "all")][2] == "100.0"
    assert cells[("m1", "1")][5:] == ["2.000", "2.000", "1"]  # our speedup, timed once
    assert cells[("m2", "all")][2] == "-" and cells[("m2", "all")][1] == "50.0"


def test_table_2_beside_geak_eval_counts_only_the_replies_a_cut_call_scored(tmp_path):
    """A call cut short scored one of the campaign's two replies: both sides of the table
    count that one, not GEAK-eval's verdict on the reply we never reached beside ours on
    one reply (nor ours with the unreached one counted as failed)."""
    from synthetic_results import evaluation, write_campaign

    command = _command_module()
    replies = [evaluation("scale_shift", 0, 0, call_ok=True, correct=True, speedup=2.0,
                          operator="generator", difficulty=1)]
    direct = {"m1": write_campaign(tmp_path / "m1", replies, islands=1,
                                   tasks=("scale_shift", "row_max"))}
    verdicts = tmp_path / "llm_corpus.json"  # GEAK-eval failed the reply we did not reach
    verdicts.write_text(json.dumps({"rows": [
        {"model": "m1", "task": task, "row": 0, "done": True, "geak_call": True,
         "geak_exec": task == "scale_shift", "agree": True} for task in ("scale_shift", "row_max")]}))

    lines = command.beside_geak_eval(direct, [str(verdicts)], str(FIXTURE_SUITE)).splitlines()
    cells = {tuple(cell.strip() for cell in line.strip("|").split("|"))[:2]:
             [cell.strip() for cell in line.strip("|").split("|")][2:] for line in lines[2:]}
    assert cells[("m1", "all")][:3] == ["1", "100.0", "100.0"]  # tasks, exec, GEAK-eval exec
    assert set(cells) == {("m1", "1"), ("m1", "all")}


def test_table_2_beside_geak_eval_counts_a_reply_without_code_at_its_level(tmp_path):
    """row_max's reply was drawn but held no usable code: no evaluation row, an LLM-call row.
    A campaign from before levels were recorded still counts it at its suite level, failed,
    on both sides."""
    from synthetic_results import evaluation, llm_call, write_campaign

    command = _command_module()
    replies = [evaluation("scale_shift", 0, 0, call_ok=True, correct=True, speedup=2.0,
                          operator="generator", difficulty=1)]
    drawn = [{**llm_call(task, 0, 0, 0, 0.0), "role": "generator"} for task in ("scale_shift", "row_max")]
    direct = {"m1": write_campaign(tmp_path / "m1", replies, drawn, islands=1,
                                   tasks=("scale_shift", "row_max"))}
    verdicts = tmp_path / "llm_corpus.json"
    verdicts.write_text(json.dumps({"rows": [
        {"model": "m1", "task": task, "row": 0, "done": True, "geak_call": task == "scale_shift",
         "geak_exec": task == "scale_shift", "agree": True} for task in ("scale_shift", "row_max")]}))

    lines = command.beside_geak_eval(direct, [str(verdicts)], str(FIXTURE_SUITE)).splitlines()
    cells = {tuple(cell.strip() for cell in line.strip("|").split("|"))[:2]:
             [cell.strip() for cell in line.strip("|").split("|")][2:] for line in lines[2:]}
    assert cells[("m1", "3")][:5] == ["1", "0.0", "0.0", "0.0", "0.0"]
    assert cells[("m1", "all")][:3] == ["2", "50.0", "50.0"]


@pytest.mark.slow
def test_one_command_writes_direct_prompting_and_search_campaigns_and_the_tables(tmp_path):
    out = tmp_path / "geak"
    env = {**os.environ, "TRITON_INTERPRET": "1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([sys.executable, str(COMMAND), "--path", str(FIXTURE_SUITE),
                           "--suites", "tritonbench-revised", "--device", "interpreter", "--workers", "2",
                           "--generations", str(GENERATIONS), "--out", str(out), "--minutes", "10",
                           "--search-generations", "1", "--islands", "2", "--offspring", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    direct = pd.read_parquet(out / "direct-tritonbench_g" / "evaluations")
    assert set(direct.operator) == {"generator"} and set(direct.task) == {"scale_shift", "row_max"}
    search = pd.read_parquet(out / "search-tritonbench-revised" / "evaluations")
    assert set(search.island) == {0, 1} and search.generation.max() == 1
    assert search[search.generation == 0].operator.eq("seed").all()
    tables = (out / "tables" / "geak_tables.md").read_text()
    for title in ("Table 2", "Table 5", "Table 6"):
        assert title in tables
    report = json.loads((out / "tables" / "geak_tables.json").read_text())
    assert report  # the same tables as data
    exec_acc = direct.groupby("task").correct.any().mean()  # one reply a task, island 0
    assert f"{exec_acc:.1%}" in tables
    # direct prompting times every correct reply whole (its speedup averages them all)
    configs = {name: config_lib.load(out / f"{name}.toml")
               for name in ("direct-tritonbench_g", "search-tritonbench-revised")}
    assert configs["direct-tritonbench_g"].fitness.time_every_case
    assert not configs["search-tritonbench-revised"].fitness.time_every_case
    # each campaign's run says where its fitness time went
    metered = [line for line in done.stdout.splitlines() if "fitness seconds by request: " in line]
    assert len(metered) == 2 and all("candidate.lease" in line for line in metered)


@pytest.mark.slow
def test_a_call_cut_by_its_end_stops_the_campaign_and_the_next_call_completes_it(tmp_path):
    out = tmp_path / "geak"
    env = {**os.environ, "TRITON_INTERPRET": "1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0"}

    def call(*limit: str) -> str:
        done = subprocess.run([sys.executable, str(COMMAND), "--path", str(FIXTURE_SUITE),
                               "--suites", "tritonbench-revised", "--device", "interpreter", "--workers", "2",
                               "--out", str(out), "--minutes", "10", "--search-generations", "2",
                               "--islands", "2", "--offspring", "1", "--resume", *limit],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    first = call("--call-minutes", "0.9")  # SIGTERM 9 s in: the campaign takes longer here
    assert "this call's time is up: SIGTERM" in first
    assert not _command_module().finished(out / "search-tritonbench-revised")
    second = call()
    assert "completed after generation 2" in second
    search = pd.read_parquet(out / "search-tritonbench-revised" / "evaluations")
    last = search.groupby(["task", "island"]).generation.max()
    assert set(last.index) == {(t, i) for t in ("scale_shift", "row_max") for i in (0, 1)} and set(last) == {2}
    assert not search.duplicated(["task", "island", "generation", "candidate_id"]).any()
