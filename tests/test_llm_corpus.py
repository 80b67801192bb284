"""experiments/perf/llm_corpus.py and its helpers: a built row carries its task and the code
GEAK-eval takes (how rows find their tasks: tests/test_label_matching.py), the GEAK-eval
check gives GEAK-eval's verdicts (its code extraction, its file, its comparison and its
quirks) on CPU modules, the table lines up, and the script runs end to end on this
machine's interpreter."""

import json
import math
import pathlib
import subprocess
import sys
import time
import types

import numpy
import pytest
import torch

from external_suites import suite

PERF = pathlib.Path(__file__).resolve().parents[1] / "experiments" / "perf"
FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "llm_corpus"
sys.path.insert(0, str(PERF))

import geak_correctness as geak  # noqa: E402
import llm_corpus  # noqa: E402
import llm_corpus_build  # noqa: E402

GOLD = FIXTURES / "gold" / "scale_rows.py"


def _fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}\n```\nIt scales each row."


# ---- the corpus ---------------------------------------------------------------------------

def test_a_built_row_carries_the_code_geak_eval_takes():
    lines = (FIXTURES / "raw_set.jsonl").read_text()
    entries = {entry["file"]: entry for entry in json.loads((FIXTURES / "instructions.json").read_text())}
    rows = llm_corpus_build.build_set("toy", lines, entries)
    assert [(row["task"], row["row"]) for row in rows] == [("double", 0), ("negate", 1), ("square_two", 2), (None, 3)]
    assert rows[0]["source"] == "def double(x):\n    return 2 * x"
    assert rows[2]["source"] == "def square(x):\n    return x * x"
    assert rows[3]["source"] == "no code here"  # no fence: the reply as it is (it will not run)


def test_corpus_loads_by_model_with_a_limit():
    rows = llm_corpus.load_corpus(str(FIXTURES / "corpus"))
    assert [(row["model"], row["row"]) for row in rows] == [("alpha", 0), ("alpha", 1), ("alpha", 2), ("beta", 0)]
    assert [row["row"] for row in llm_corpus.load_corpus(str(FIXTURES / "corpus"), ["alpha"], limit=2)] == [0, 1]
    with pytest.raises(FileNotFoundError, match="no corpus rows for gamma"):
        llm_corpus.load_corpus(str(FIXTURES / "corpus"), ["gamma"])


# ---- GEAK-eval's code extraction and file ------------------------------------------------

def test_extraction_joins_fenced_blocks_and_drops_tests():
    reply = ("```python\nimport torch\n```\ntext\n```py\ndef f(x):\n    return x\n\n"
             "def test_f():\n    return f(1)\nresult = test_f()\nprint(test_f())\n```")
    assert geak.extract_code(reply) == "import torch\n\ndef f(x):\n    return x\nprint(test_f())"


def test_extraction_gives_no_code_for_fences_without_a_language_word():
    assert geak.extract_code("```\ndef f(): pass\n```") is None


def test_extraction_keeps_an_unfenced_reply_whole():
    assert geak.extract_code("Sure!\n\ndef f(): pass") == "Sure!\n\ndef f(): pass"


def test_extraction_leaves_a_main_block_it_empties_uncompilable():
    code = geak.extract_code(_fenced("def f():\n    pass\nif __name__ == '__main__':\n    test_f()"))
    with pytest.raises(SyntaxError):
        compile(code, "gen.py", "exec")


def test_the_file_joins_the_test_lines_with_newlines():
    composed = geak.compose("def f(): pass", GOLD.read_text())
    assert composed.startswith("def f(): pass\n\n" + geak.SEPARATOR + "\n\n")
    assert "def test_scale_rows():\n\n    results = {}\n\n" in composed  # lines doubled, as GEAK-eval does


# ---- GEAK-eval's comparison ----------------------------------------------------------------

def test_a_top_level_tensor_is_held_to_the_passed_tolerance():
    ref = torch.ones(8)
    assert geak.exec_verdict(ref, ref * 1.05) == (True, "")
    assert geak.exec_verdict(ref, ref * 1.2)[0] is False


def test_dict_elements_are_held_to_the_defaults_not_the_passed_tolerance():
    ref = {"a": torch.ones(8)}
    ok, reason = geak.exec_verdict(ref, {"a": ref["a"] * 1.05}, atol=1e-2, rtol=1e-1)
    assert not ok and "atol 0.001, rtol 0.001" in reason
    assert geak.exec_verdict(ref, {"a": ref["a"] + 5e-4})[0] is True


def test_dicts_compare_values_in_order_and_zip_away_extra_items():
    ref = {"a": torch.zeros(3), "b": torch.ones(3)}
    assert geak.exec_verdict(ref, {"x": torch.zeros(3), "y": torch.ones(3)})[0] is True
    assert geak.exec_verdict(ref, {"b": torch.ones(3), "a": torch.zeros(3)})[0] is False
    assert geak.exec_verdict(ref, {"a": torch.zeros(3)})[0] is True  # "b" never compared


def test_shapes_that_broadcast_pass_and_dtypes_that_differ_fail():
    ref = {"a": torch.full((4, 3), 2.0)}
    assert geak.exec_verdict(ref, {"a": torch.full((3,), 2.0)})[0] is True
    ok, reason = geak.exec_verdict(ref, {"a": torch.full((4, 3), 2.0, dtype=torch.float64)})
    assert not ok and "raised RuntimeError" in reason


def test_nan_numbers_and_types():
    assert geak.exec_verdict({"a": torch.tensor([math.nan])}, {"a": torch.tensor([math.nan])})[0] is False
    assert geak.exec_verdict([1, 2.5, "x"], [1, 2.5, "x"]) == (True, "")
    assert geak.exec_verdict([1.0], [1.0 + 1e-9])[0] is False  # plain numbers compare exactly
    assert geak.exec_verdict({"a": torch.ones(2)}, [torch.ones(2)])[0] is False
    assert geak.exec_verdict(None, {"a": 1}) == (False, "Reference output is None")
    assert geak.exec_verdict(numpy.ones(3), numpy.ones(3) + 1e-3) == (True, "")


def test_a_result_that_is_not_a_plain_true_is_not_correct():
    ref = {"a": torch.ones(3), "n": torch.ones(3)}
    gen = {"a": torch.ones(3), "n": 1.0}  # `tensor == float` gives a tensor, not True
    ok, _ = geak.exec_verdict(ref, gen)
    assert ok is False


# ---- GEAK-eval's check, run -------------------------------------------------------------------

RIGHT = "import torch\n\ndef scale_rows(x, factor):\n    return x * factor.unsqueeze(1)\n"
REPLIES = {
    "right": (_fenced(RIGHT + "\ndef test_scale_rows():\n    print('mine')\ntest_scale_rows()"), True, True),
    "slightly_off": (_fenced(RIGHT.replace("factor.unsqueeze(1)", "factor.unsqueeze(1) * 1.01")), True, False),
    "raises": (_fenced("import torch\ndef scale_rows(x, factor):\n    raise ValueError('no')"), False, False),
    "not_callable": (_fenced("import torch\nscale_rows = None"), False, False),
    "prose": ("I cannot help with that.", False, False),
    "bad_fences": ("```\ncode\n```", False, False),
}


@pytest.fixture(scope="module")
def checker():
    with geak.Checker(timeout_s=20) as running:
        yield running


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_the_check_gives_geak_eval_s_verdict(checker, name):
    reply, call_ok, exec_ok = REPLIES[name]
    verdict = checker.check(reply, str(GOLD))
    assert (verdict.call_ok, verdict.exec_ok) == (call_ok, exec_ok), verdict


def test_the_reference_is_imported_after_the_candidate_in_one_process(checker):
    # a candidate that changes torch's default dtype changes the reference's outputs too
    reply = _fenced("import torch\ntorch.set_default_dtype(torch.float64)\n"
                    "def scale_rows(x, factor):\n    return x * factor[:, None]")
    verdict = checker.check(reply, str(GOLD))
    assert verdict.call_ok and verdict.exec_ok, verdict


def test_a_hung_candidate_is_killed_at_the_step_limit():
    with geak.Checker(timeout_s=3) as quick:
        start = time.monotonic()
        verdict = quick.check(_fenced("import time\nimport torch\ndef scale_rows(x, factor):\n    while True:\n"
                                      "        time.sleep(0.1)"), str(GOLD))
        assert time.monotonic() - start < 3 + 10
    assert (verdict.call_ok, verdict.exec_ok) == (False, False)
    assert "timed out after 3 s" in verdict.reason


# ---- the table --------------------------------------------------------------------------

def _record(model, task, correct, geak_exec, stage="correct", wall_s=1.0):
    return llm_corpus.Verdicts(model, task, 0, project_stage=stage, project_correct=correct,
                               project_call=correct, project_kind=None if correct else "mismatch",
                               geak_call=geak_exec, geak_exec=geak_exec, wall_s=wall_s, done=True)


def test_the_table_has_a_row_per_model_then_all_aligned_under_its_header():
    records = [_record("alpha", "t1", True, True), _record("alpha", "t2", False, True, stage="gate"),
               _record("beta", "t1", True, False, wall_s=7.5), _record("beta", "t2", False, False),
               llm_corpus.Verdicts("beta", None, 3)]
    summaries = llm_corpus.summarize(records)
    lines = llm_corpus.table(summaries).splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["alpha", "beta", "all"]
    assert len({len(line) for line in lines}) == 1, lines
    assert lines[0].split()[:2] == ["model", "n"]
    overall = summaries[-1]
    assert (overall["n"], overall["unmatched"], overall["agree"]) == (4, 1, 0.5)
    assert (overall["accepted_geak_wrong"], overall["gate_refused_geak_correct"]) == (1, 1)
    assert overall["max_wall_s"] == 7.5
    goals = llm_corpus.goals(overall)
    assert "50.0% (NOT MET)" in goals[0] and "1/2 = 50.0% (NOT MET)" in goals[2]
    listed = llm_corpus.disagreement_lines(records)
    assert len(listed) == 2 and "gate_refused_geak_correct" in listed[0] and "accepted_geak_wrong" in listed[1]


def test_every_span_past_its_limit_plus_grace_is_named():
    from fitness import Limits
    from fitness.processes import watchdog

    limits = Limits.uniform(20)  # a harness run gets 60 s, a timing pass 20 s
    over = 60 + watchdog.GRACE_S + 0.5
    ran = types.SimpleNamespace(check_s=over, compile_s=5.0, bench_s=20 + watchdog.GRACE_S)
    assert [line.split(" ")[:2] for line in llm_corpus.overruns(ran, limits)] == [["harness", "run"]]
    record = _record("alpha", "t1", False, False)
    record.over_limit = "; ".join(llm_corpus.overruns(ran, limits))
    assert llm_corpus.over_limit_lines([record, _record("beta", "t2", True, True)]) == [
        f"  alpha/t1 (row 0): harness run {over:.1f} s > 60 + {watchdog.GRACE_S:g} s"]
    assert llm_corpus.summarize([record])[-1]["over_limit"] == 1


def test_an_evaluation_running_past_its_bound_is_named_while_it_runs(capsys):
    late, early = _record("alpha", "t1", False, False), _record("beta", "t2", False, False)
    now = time.monotonic()
    llm_corpus.watch([(late, now - 100.0), (early, now - 1.0)], bound_s=50.0)
    assert late.over_limit.startswith("no verdict 100 s in (bound 50 s)") and not early.over_limit
    assert capsys.readouterr().out.splitlines() == [
        f"past its bound: alpha/t1 (row 0): {late.over_limit}"]


def test_outputs_are_json_and_csv(tmp_path):
    records = [_record("alpha", "t1", True, True)]
    out = tmp_path / "r.json"
    llm_corpus.write_outputs(str(out), {"device": "x"}, records, llm_corpus.summarize(records))
    assert json.loads(out.read_text())["rows"][0]["kind"] == "agree"
    assert out.with_suffix(".csv").read_text().splitlines()[0].startswith("model,task,row,")


def test_a_resumed_run_keeps_the_replies_an_earlier_run_judged_and_scores_the_rest(tmp_path):
    judged, pending = _record("alpha", "t1", True, True, wall_s=3.0), _record("alpha", "t2", False, False)
    pending.done = False
    earlier = tmp_path / "earlier.json"
    llm_corpus.write_outputs(str(earlier), {"device": "x"}, [judged, pending],
                             llm_corpus.summarize([judged, pending]))
    records = [llm_corpus.Verdicts("alpha", "t1", 0), llm_corpus.Verdicts("alpha", "t2", 0),
               llm_corpus.Verdicts("beta", "t1", 0)]
    assert llm_corpus.resumed(records, [str(earlier)]) == 1
    assert records[0] == judged  # every field as the earlier run left it
    assert not records[1].done and not records[2].done  # scored now


# ---- the script ---------------------------------------------------------------------------

def test_the_script_runs_end_to_end_on_the_interpreter(tmp_path):
    geak_eval = suite("GEAK-eval")
    out = tmp_path / "corpus.json"
    done = subprocess.run([sys.executable, str(PERF / "llm_corpus.py"), "--corpus", str(FIXTURES / "corpus"),
                           "--geak", str(geak_eval), "--device", "interpreter", "--limit", "2",
                           "--workers", "1", "--geak-workers", "2", "--geak-timeout", "60",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "model" in done.stdout and "agree >= 99%" in done.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [(row["model"], row["task"]) for row in rows] == [("alpha", "add_example"), ("alpha", "add_example"),
                                                             ("beta", "add_example")]
    assert all(row["done"] and row["project_kind"] == "unsupported_on_backend" for row in rows)
    assert rows[1]["geak_reason"] == "Code is empty"


def test_gate_only_counts_the_replies_an_earlier_geak_check_passed_that_the_gate_refuses(tmp_path):
    geak_eval = suite("GEAK-eval")
    rows = llm_corpus.load_corpus(str(FIXTURES / "corpus"))
    verdicts = tmp_path / "earlier.json"
    verdicts.write_text(json.dumps({"rows": [
        {"model": row["model"], "row": row["row"], "geak_call": True, "geak_exec": row["row"] == 0}
        for row in rows]}))
    done = subprocess.run([sys.executable, str(PERF / "llm_corpus.py"), "--corpus", str(FIXTURES / "corpus"),
                           "--geak", str(geak_eval), "--gate-only", "--verdicts", str(verdicts)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    called = [line for line in done.stdout.splitlines() if line.startswith("geak_call in")]
    assert len(called) == 1 and called[0].endswith("of them now")
    passed, refused = (int(word) for word in called[0].split(":")[1].split() if word.isdigit())
    gated = sum(int(line.split()[1]) for line in done.stdout.splitlines() if " gated, " in line)
    assert passed == gated >= 1 and 0 <= refused <= passed  # every reply gated, GEAK passed all


def test_the_verdicts_by_level_count_each_reply_once_the_last_run_s(tmp_path):
    import corpus_levels

    def run(name: str, rows: list[dict]) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({"rows": [{"done": "True", "agree": "True", **row} for row in rows]}))
        return str(path)

    wrong = {"project_call": "True", "geak_call": "True", "project_correct": "False", "geak_exec": "False"}
    right = {**wrong, "project_correct": "True", "geak_exec": "True"}
    first = run("a.json", [{"model": "m", "task": "add", "row": "0", **wrong},
                           {"model": "m", "task": "attn", "row": "1", **wrong}])
    # the resumed run judged the first reply again: its verdict counts, once
    second = run("b.json", [{"model": "m", "task": "add", "row": "0", **right}])
    lines = {line["level"]: line for line in corpus_levels.by_level(
        corpus_levels.replies([first, second]), {"add": 1, "attn": 5})}
    assert (lines["L1"]["replies"], lines["L1"]["project_correct"], lines["L1"]["geak_exec"]) == (1, 100.0, 100.0)
    assert (lines["L5"]["replies"], lines["L5"]["project_correct"]) == (1, 0.0)
    assert (lines["all"]["replies"], lines["all"]["geak_exec"], lines["all"]["disagree"]) == (2, 50.0, 0)
