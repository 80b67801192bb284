"""A real `evo run` in its own process, for the tests that signal it or fill its disk.

Shared by test_campaign_signals.py and test_campaign_fatal.py: the small offline campaign
they run, the subprocess itself (its own session, so a signal reaches it alone), the
process tree it started (Ray's GCS, raylet and workers, the fitness actor's sandboxed
workers) captured while it runs, and the rows a clean run records.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[1]
GENERATIONS = 5



def offline_config(name: str, seed: int, generations: int, *extra: str) -> str:
    """Returns the TOML of a small offline vector_add campaign on the interpreter (two
    islands of three, migrating every two generations); `extra` lines join [campaign]."""
    campaign = "\n".join((f'name = "{name}"', 'tasks = ["vector_add"]', f"seed = {seed}", *extra))
    return f"""
[campaign]
{campaign}
[search]
generations = {generations}
population = 3
offspring = 3
islands = 2
migration_interval = 2
[operators]
mode = "offline"
[fitness]
device = "interpreter"
workers = 2
"""


CONFIG_TOML = offline_config("faults", 7, GENERATIONS)


def config_file(folder: Path) -> Path:
    path = folder / "faults.toml"
    path.write_text(CONFIG_TOML)
    return path


def rows(out: Path) -> list[tuple]:
    """Returns the campaign's rows as sorted (task, island, generation, candidate_id)."""
    columns = ["task", "island", "generation", "candidate_id"]
    table = ds.dataset(out / "evaluations", format="parquet").to_table(columns=columns)
    return sorted(tuple(row[c] for c in columns) for row in table.to_pylist())


def clean_env() -> dict:
    """Returns this environment without a Ray address, so `evo run` starts its own Ray."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}


def start(config_path: Path, out: Path, *extra: str, terminal_folder: Path | None = None):
    """Starts `evo run` in its own session, its stdout and stderr in one file in
    `terminal_folder` (default: `out`'s parent; a pipe could fill and stall it); returns
    the Popen, `terminal` reads what it printed."""
    path = (terminal_folder or out.parent) / f"{out.name}.terminal"
    process = subprocess.Popen([sys.executable, "-m", "evo", "run", str(config_path), "--out",
                                str(out), *extra], cwd=ROOT, env=clean_env(),
                               stdout=open(path, "wb"), stderr=subprocess.STDOUT,
                               start_new_session=True)
    process.terminal_path = path
    return process


def terminal(process) -> str:
    """Returns what the `evo run` started by `start` printed."""
    return process.terminal_path.read_text(errors="replace")


def wait_for_generation(process, out: Path, generation: int, timeout_s: float = 240) -> None:
    """Waits until some island's part of `generation` is written (the run is mid-way)."""
    deadline = time.monotonic() + timeout_s
    while not list((out / "evaluations").glob(f"part-{generation:05d}-*.parquet")):
        assert process.poll() is None, terminal(process)[-3000:]
        assert time.monotonic() < deadline, f"never reached generation {generation}"
        time.sleep(0.05)


def descendants(pid: int) -> list:
    """Returns every process `pid` started, however deep (psutil: Ray's copy)."""
    import ray  # noqa: F401  (puts Ray's psutil on the path)
    import psutil

    return psutil.Process(pid).children(recursive=True)


def alive(processes: list) -> list:
    import psutil

    def running(process) -> bool:
        try:
            return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return [process for process in processes if running(process)]


def actor_pids(pid: int) -> set[int]:
    """Returns the campaign actors' processes (by their Ray title) among `pid`'s descendants."""
    import psutil

    found = set()
    for process in descendants(pid):
        with contextlib.suppress(psutil.Error):
            command = process.cmdline()  # empty for a process exiting or not yet exec'd
            if command[:1] and command[0].startswith(("ray::FitnessService", "ray::Population")):
                found.add(process.pid)
    return found


def seconds_until_gone(processes: list, limit_s: float) -> float:
    """Returns how long `processes` took to exit, waiting at most `limit_s`."""
    started = time.monotonic()
    while alive(processes) and time.monotonic() - started < limit_s:
        time.sleep(0.05)
    return time.monotonic() - started


def kill_leftovers(process, processes: list) -> None:
    """SIGKILLs, by pid, the run and whatever it started that is still alive (cleanup)."""
    for leftover in alive(processes):
        leftover.kill()
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
