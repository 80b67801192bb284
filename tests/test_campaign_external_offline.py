"""Offline campaigns on external suites under the interpreter: children of the reference differ
from it in knobs and pass the suite's own harness; a task whose reference has no knob is said
once and keeps its baseline. GEAK-eval's real TritonBench-revised files all place tensors on
'cuda' by name (none runs on the interpreter), so the campaign runs on a folder in that layout
built from the TritonBench fixture; the ROCm fixture's `add_kernel`, launched only by its
pytest code, checks the inserted `@triton.heuristics` launch options through its harness."""

import pathlib
import random

import pandas as pd
import pytest

from benchmarks.external import load_suite
from evo import campaign, config as config_lib
from evo.records import make_candidate
from operators import knobs, offline

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "external"
SCALE_SHIFT = FIXTURES / "tritonbench" / "data" / "TritonBench_G_v1" / "scale_shift.py"
COMPUTED_LAUNCH = ("BLOCK_SIZE=256)", "BLOCK_SIZE=triton.next_power_of_2(min(n_elements, 1024)), "
                                      "num_warps=x.element_size(), num_stages=x.element_size())")
"""Turns scale_shift's launch into one with nothing literal: no knob left."""


def _suite_folder(tmp_path):
    """A TritonBench-revised folder holding scale_shift and a copy of it without knobs."""
    folder = tmp_path / "TritonBench_G_v1"
    folder.mkdir()
    source = SCALE_SHIFT.read_text()
    (folder / "scale_shift.py").write_text(source)
    (folder / "scale_shift_fixed.py").write_text(source.replace(*COMPUTED_LAUNCH))
    return folder


@pytest.mark.slow  # campaign-level: `make test-fast` leaves it out
def test_offline_campaign_on_a_tritonbench_folder_varies_knobs_and_says_which_it_cannot(
        interpreter_fitness, tmp_path, capsys):
    folder = _suite_folder(tmp_path)
    config = config_lib.from_dict({
        "campaign": {"name": "external-offline", "suite": "tritonbench-revised", "path": str(folder),
                     "seed_with_baseline": True},
        "search": {"generations": 2, "population": 2, "offspring": 2, "islands": 1},
        "operators": {"mode": "offline"},
        "fitness": {"device": "interpreter", "workers": 1}})
    campaign.run_campaign(config, tmp_path / "run", fitness_actors=interpreter_fitness)

    printed = capsys.readouterr().out
    assert printed.count("offline operators cannot vary 1 of 2 tasks") == 1
    assert "scale_shift_fixed (no knob)" in printed
    rows = pd.read_parquet(tmp_path / "run" / "evaluations")
    fixed = rows[rows.task == "scale_shift_fixed"]
    assert list(fixed.operator) == ["seed"] and fixed.correct.all()
    varied = rows[(rows.task == "scale_shift") & (rows.generation > 0)]
    assert len(varied) >= 3 and varied.correct.all()
    assert set(varied.operator) <= {"offline_mutation", "offline_crossover"}
    (task,) = [t for t in load_suite("tritonbench-revised", str(folder)) if t.name == "scale_shift"]
    baseline = task.baseline_source
    found = knobs.find(baseline, "interpreter")
    reachable = {knobs.apply(baseline, found, {k.key: v}) for k in found for v in k.values}
    first = varied[varied.generation == 1]
    assert set(first.source) <= reachable - {baseline}  # one knob away from the reference


def test_inserted_launch_options_pass_the_rocm_harness(fitness_evaluator):
    (task,) = [t for t in load_suite("rocm", str(FIXTURES / "rocm")) if t.name == "test_fx_add"]
    assert "add_kernel[" not in task.baseline_source  # its pytest code launches it
    child = offline.mutate(task, make_candidate(task.name, task.baseline_source), random.Random(1),
                           "interpreter")
    assert "@triton.heuristics({'num_" in child.source
    evaluation = fitness_evaluator.evaluate(task, child)
    assert evaluation.correct, evaluation.error_trace
