"""Test helpers for the baselines' launchers and the sweep scripts: record what a launcher passes
to its kernel, import a script from experiments/perf as a module, run its smoke mode."""

import csv
import importlib.util
import pathlib
import subprocess
import sys

PERF = pathlib.Path(__file__).resolve().parent.parent / "experiments" / "perf"


class Recorder:
    """Stands in for a kernel: records each launch's keywords (and the kernel's name under
    "kernel"), then launches the real kernel."""

    def __init__(self, kernel, launched: list):
        self.kernel, self.launched = kernel, launched

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launched.append({**kwargs, "kernel": self.kernel.__name__})
            return self.kernel[grid](*args, **kwargs)
        return launch


def perf_script(name: str):
    """Returns experiments/perf/<name>.py imported as module `name`."""
    spec = importlib.util.spec_from_file_location(name, PERF / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def smoke_run(name: str, out: pathlib.Path) -> tuple[dict, str]:
    """Runs experiments/perf/<name>.py --smoke into `out`. Returns (its one CSV row, its
    summary), having checked that it exited 0, printed the summary and timed a correct config."""
    done = subprocess.run([sys.executable, str(PERF / f"{name}.py"), str(out), "--smoke"], cwd=PERF.parent.parent,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(out / "sweep.csv") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["source"], row["status"]) == ("table", "ok")
    assert float(row["median_us"]) > 0 and float(row["vs_library"]) > 0 and float(row["max_abs_err"]) < 0.01
    summary = (out / "summary.md").read_text()
    assert summary in done.stdout
    return row, summary
