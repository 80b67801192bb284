"""Progress lines and table: one count per meaning (candidates, and how many of them are
repeats whose verdict was reused; correct ones), all from the rows, fitness time named for
what it is (GPU time on a GPU, eval time on the CPU interpreter: no GPU there), and each
task's best named as evo.analysis.best names it (no best by speed where timing means nothing)."""

import io

import pandas as pd
import pytest
from rich.console import Console

from evo.analysis import best
from evo.progress import Progress, RowCounts, candidates_text
from evo.records import Evaluation
from synthetic_results import evaluation


def _seed(island: int, reused: bool, meaningful: bool = True) -> dict:
    """The seed's row on `island`: one kernel (one id), scored once, reused on island 1."""
    row = evaluation("add", island, 0, call_ok=True, correct=True, speedup=1.0,
                     operator="seed", reused=reused, meaningful=meaningful)
    return {**row, "candidate_id": "seed-kernel"}


def _offspring(speedup: float | None, reused: bool = False, meaningful: bool = True) -> dict:
    return evaluation("add", 0, 1, call_ok=True, correct=speedup is not None, speedup=speedup,
                      reused=reused, meaningful=meaningful)


def _run(backend: str) -> tuple[list[str], Progress]:
    """Feeds a two-island task its seeds and island 0's generation 1 (timed meaningfully
    except on the interpreter); returns the lines."""
    meaningful = backend != "interpreter"
    stream = io.StringIO()  # not a terminal: one line per event
    with Progress(["add"], 3, backend, stream=stream, islands=2) as progress:
        progress.evaluated("add", Evaluation("seed-kernel", "timed", True, True, compile_s=1.0,
                                             check_s=0.5, bench_s=0.25))
        progress.seeds_scored(("add", 0), [_seed(0, reused=False, meaningful=meaningful)])
        progress.seeds_scored(("add", 1), [_seed(1, reused=True, meaningful=meaningful)])
        for _ in range(2):
            progress.evaluated("add", Evaluation("x", "timed", True, True, bench_s=0.5))
        progress.island_done(("add", 0), 1, [_offspring(1.4, meaningful=meaningful),
                                             _offspring(1.4, reused=True, meaningful=meaningful),
                                             _offspring(None, meaningful=meaningful)], [])
    return stream.getvalue().splitlines(), progress


def test_lines_give_one_count_of_candidates_and_name_its_repeats():
    lines, _ = _run("cuda")
    assert len(lines) == 2
    assert lines[0].endswith("] gen 0/3 add: seed kernel correct, GPU time 1.8 s")
    assert lines[1].endswith(
        "] gen 1/3 add island 0: 5 candidates on 2 islands (2 reused), 4 correct, best 1.40x, "
        "GPU time 2.8 s")


def test_one_island_lines_name_no_islands_and_no_repeats_when_there_are_none():
    stream = io.StringIO()
    with Progress(["add"], 2, "rocm", stream=stream) as progress:
        progress.island_done(("add", 0), 1, [_offspring(0.9)], [])
    assert stream.getvalue().rstrip().endswith(
        "] gen 1/2 add: 1 candidate, 1 correct, best 0.90x, GPU time 0.0 s")
    assert candidates_text(7, 1) == "7 candidates (1 a repeat, its verdict reused)"


def test_interpreter_lines_and_table_say_eval_time_never_gpu_or_device():
    lines, progress = _run("interpreter")
    assert lines[0].endswith("gen 0/3 add: seed kernel correct, eval time 1.8 s")
    assert lines[2].endswith(", eval time 2.8 s")
    table = io.StringIO()
    Console(file=table, width=200).print(progress._table())
    shown = table.getvalue()
    assert "eval s" in shown and "candidates" in shown and "repeats" in shown
    for wording in ("GPU", "device", "scored", "offspring"):
        assert wording not in "\n".join(lines) + shown, wording


def test_interpreter_lines_and_table_name_no_best_by_speed_and_say_why():
    """The interpreter's 1.40x is its clock's noise: the line counts the correct candidates
    and ranks them by correctness, as `evo report` and `evo export` do, never by that 1.40x."""
    lines, progress = _run("interpreter")
    assert lines[1].endswith("] best n/a (interpreter): ranked by correctness; timing not "
                             "meaningful here")
    assert lines[2].endswith("4 correct, best n/a, eval time 2.8 s")
    table = io.StringIO()
    Console(file=table, width=200).print(progress._table())
    shown = table.getvalue()
    assert "n/a (interpreter)" in shown
    assert "n/a: ranked by correctness; timing not meaningful here" in shown
    assert "1.40" not in "\n".join(lines) + shown


def test_lines_stay_short_and_say_the_interpreter_caveat_once():
    """Many generations on the interpreter, with LLM calls: the caveat is one line of its own,
    said once; each generation's line is at most 150 characters (it was about 250)."""
    stream = io.StringIO()
    calls = [{"cost_usd": 0.01, "failure_kind": None}, {"cost_usd": 0.01, "failure_kind": None}]
    with Progress(["softmax_online"], 20, "interpreter", stream=stream, islands=4) as progress:
        for generation in range(1, 21):
            for island in range(4):
                progress.island_done(("softmax_online", island), generation,
                                     [_offspring(1.4, reused=generation % 2 == 0,
                                                 meaningful=False)], calls)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 81
    assert sum("timing not meaningful" in line for line in lines) == 1
    assert max(len(line) for line in lines) <= 150, max(lines, key=len)
    assert lines[-1].endswith("] gen 20/20 softmax_online island 3: 80 candidates on 4 islands "
                              "(40 reused), 80 correct, best n/a, LLM 160 calls $1.6000, eval "
                              "time 0.0 s")


ROW_SETS = {
    "gpu, fastest correct": [_seed(0, False), _offspring(1.4), _offspring(None)],
    "interpreter": [_seed(0, False, meaningful=False), _offspring(3.2, meaningful=False)],
    "gpu, correct but never timed on every case": [
        {**_offspring(1.4), "latency_us": [10.0, None], "speedup": None}],
    "nothing correct": [_offspring(None)],
}


@pytest.mark.parametrize("rows", ROW_SETS.values(), ids=ROW_SETS.keys())
def test_counts_name_the_best_as_the_report_does(rows):
    counts = RowCounts()
    counts.add(rows)
    chosen = best.best_candidates(pd.DataFrame(rows))["add"]
    if chosen is None:
        assert counts.choice() is None and counts.speedup_text() == "-"
        return
    assert (counts.choice()["ranked_by"], counts.choice()["speedup"]) == (chosen["ranked_by"],
                                                                          chosen["speedup"])
    assert counts.speedup_text() == best.speedup_text(chosen)
    if chosen["ranked_by"] == best.BY_CORRECTNESS:
        assert counts.text().endswith(f", ranked {chosen['ranking']}")
