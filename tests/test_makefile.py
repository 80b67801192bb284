"""`make test-fast` sets up what its tests need and no more: the virtualenv and the sandbox,
not Chromium, which only the browser tests (marked slow, so `make test` alone runs them)
need; `make test` installs it, as the README says."""

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent


def recipe(target: str) -> str:
    """Returns what `make TARGET` would run, its prerequisites' recipes included (`make -n`:
    nothing is run)."""
    ran = subprocess.run(["make", "-n", "-B", target, "OUT=results/dry-run"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_make_test_fast_does_not_install_chromium_and_make_test_does():
    fast, full = recipe("test-fast"), recipe("test")
    assert "chromium" not in fast and "bubblewrap" in fast
    assert 'pytest -q -m "not slow"' in fast
    assert "apt-get install -y -qq chromium chromium-driver" in full
