"""experiments/perf/design_check.py: a design setting goes into every bucket and runs every case
against the reference, and a child that fails or runs past its limit is reported, not lost."""

import task_checks
from kernel_launches import Recorder, perf_script

design_check = perf_script("design_check")


def test_a_setting_goes_into_every_bucket_and_runs_every_case(monkeypatch):
    launched, loaded = [], []
    real_import = task_checks.import_file

    def import_recorded(path, name):
        module = real_import(path, name)
        module._flip2d_kernel = Recorder(module._flip2d_kernel, launched)
        loaded.append(module)
        return module

    monkeypatch.setattr(task_checks, "import_file", import_recorded)
    assert design_check.check("flip2d", {"FLAT": 1, "BLOCK_M": 2, "BLOCK_N": 64}, "cpu") == []
    [module] = loaded
    assert all(dict(entry)["FLAT"] == 1 and dict(entry)["BLOCK_N"] == 64 for entry in module.CONFIGS.values())
    # each of the three interpreter cases is contiguous: a flat flip in blocks of 2 * 64
    assert [(kw["BLOCK_M"], kw["BLOCK_N"]) for kw in launched] == [(1, 128)] * 3


def test_a_child_that_fails_is_reported_with_its_error():
    verdict = design_check.run_child("no_such_task", {}, "cpu", 120)
    assert verdict.startswith("exit 1:") and "no_such_task" in verdict


def test_a_child_past_its_limit_is_reported():
    assert design_check.run_child("flip2d", {}, "cpu", 0.5) == "no result in 0.5 s"
