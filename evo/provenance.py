"""campaign.json: what a results folder was made with, and the check that a resume matches it."""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
from pathlib import Path

from evo import results
from evo.config import Config, ConfigError

RESUMABLE_CHANGES = ("search.generations", "budget.max_usd", "budget.max_tokens",
                     "budget.max_gpu_seconds", "budget.max_wall_seconds",
                     "fitness.answer_timeout_s", "fitness.note_wait_s", "fitness.workers",
                     "fitness.spares", "operators.base_url",
                     "operators.api_key_env", "operators.request_timeout_s",
                     "operators.max_retries", "operators.max_consecutive_failures")
"""Keys a resumed campaign may change: more generations, a bigger budget, how the same
model is reached (a campaign stopped because its endpoint failed resumes on a fixed one),
how patiently the engine waits on fitness answers and how often it says what it waits for,
or how many workers score (how fast, not what: a verdict is its harness version's, and the
device must be the same, `check_device`)."""


def write(folder: Path, config: Config, device: dict, tasks: list) -> None:
    """Writes campaign.json: config, versions, device, git commit, start time, host, and each
    task's difficulty (a task that never gets a row, every reply of it unusable, still counts
    at its level in the tables: `metrics.Results.difficulty`)."""
    results.write_json(folder / "campaign.json", {
        "config": config.model_dump(mode="json"), "versions": _versions(), "device": device,
        "git_commit": _git_commit(),
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "host": platform.node(), "difficulty": {task.name: task.difficulty for task in tasks}})


def check_resumable(folder: Path, config: Config) -> None:
    """Raises ConfigError unless `config` may continue the campaign recorded in `folder`."""
    recorded_file = folder / "campaign.json"
    if not recorded_file.exists():
        raise ConfigError(f"--resume: {folder} holds no campaign (no campaign.json)")
    recorded = _flatten(json.loads(recorded_file.read_text())["config"])
    current = _flatten(config.model_dump(mode="json"))
    changed = [f"{key}: {recorded.get(key)!r} -> {current.get(key)!r}"
               for key in sorted(set(recorded) | set(current))
               if recorded.get(key) != current.get(key) and key not in RESUMABLE_CHANGES]
    if changed:
        raise ConfigError("--resume: the config differs from the campaign's in keys that "
                          "change the search (only " + ", ".join(RESUMABLE_CHANGES) +
                          " may change):\n  " + "\n  ".join(changed))


def check_device(folder: Path, device: dict) -> None:
    """Raises ConfigError if a resumed campaign would score on another device than it began on
    (its rows, and the scores it reuses, would mix two devices)."""
    recorded = json.loads((folder / "campaign.json").read_text())["device"]
    if recorded != device:
        raise ConfigError(f"--resume: {folder} was scored on {recorded}, this run would score "
                          f"on {device}; start a new campaign (replay its LLM calls with "
                          f"operators.mode = \"replay\" to re-score them here)")


def _flatten(config: dict) -> dict:
    return {f"{section}.{key}": value for section, body in config.items()
            for key, value in body.items()}


def _versions() -> dict:
    import ray
    import torch
    import triton

    return {"python": platform.python_version(), "torch": torch.__version__,
            "triton": triton.__version__, "ray": ray.__version__}


def _git_commit() -> str | None:
    """Returns the commit of the KernelEvo checkout (with "+dirty" if modified), or None."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty.strip() else "")
