"""`make run` says what its set-up installs and about how long that takes before it starts,
needs no browser, and ends by naming the results folder with `evo report` / `evo view`."""

import os
import shutil
import stat
import subprocess

import pytest

import campaign_processes as runs

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")

FAKE_PYTHON = """#!/bin/sh
# A python3 without torch whose `-m venv DIR` makes a DIR/bin/pip that only says it ran.
if [ "$1" = "-c" ]; then exit 1; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    printf '#!/bin/sh\\necho "pip ran: $*"\\n' > "$3/bin/pip"
    chmod +x "$3/bin/pip"
    exit 0
fi
exit 1
"""


def _make(*args, timeout=600):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=runs.ROOT,
                          env=runs.clean_env(), capture_output=True, text=True, timeout=timeout)


def test_set_up_says_what_it_installs_and_how_long_before_installing(tmp_path):
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    venv = tmp_path / "venv"

    made = _make(f"{venv}/.installed", f"VENV={venv}", f"PYTHON={python}")

    assert made.returncode == 0, made.stdout + made.stderr
    said = made.stdout.splitlines()
    assert said[0] == (f"set-up: creating {venv} and installing PyTorch (CPU build, torch==2.13.0), "
                       "Triton, Ray, pandas, pyarrow, matplotlib and KernelEvo into it: about "
                       "2-4 minutes, once"), made.stdout
    assert said[1].startswith("pip ran: install -q --upgrade pip"), made.stdout
    assert said[-1] == f"set-up: done ({venv}; `source {venv}/bin/activate` puts evo on your PATH)"


def test_make_run_needs_no_browser():
    planned = _make("-n", "-o", ".venv/.installed", "run", "OUT=results/planned")
    assert planned.returncode == 0, planned.stderr
    assert "evo run experiments/quickstart.toml" in planned.stdout
    assert "chromium" not in planned.stdout


@pytest.mark.slow  # a real (short) quickstart campaign
def test_make_run_ends_by_naming_report_and_view_of_its_folder(tmp_path):
    if not (runs.ROOT / ".venv" / "bin" / "evo").exists():
        pytest.skip("no .venv here: `make run` would set it up first")
    out = tmp_path / "quickstart"
    made = _make("-o", ".venv/.installed", "run", f"OUT={out}",
                 "RUN_ARGS=--set search.generations=0 --set campaign.tasks=vector_add "
                 "--set fitness.device=interpreter")
    assert made.returncode == 0, (made.stdout + made.stderr)[-3000:]
    assert (out / "campaign.json").is_file()
    assert made.stdout.splitlines()[-3:] == [
        f"next: evo report {out}   (tables and figures)",
        f"      evo view {out}     (the page in your browser, live while a campaign runs)",
        "      (evo is in .venv/bin: `source .venv/bin/activate` first)"]
    assert os.path.isdir(out / "evaluations")
