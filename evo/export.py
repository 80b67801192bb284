"""`evo export DIR [--task T] [--candidate ID] [--out PATH]`: a candidate's source as a file.

The file is the candidate's module exactly as the campaign scored it (the `source` column of
its evaluations row), so `evo eval TASK FILE` takes it back and scores it the way the campaign
did: the way to carry the best kernel of an interpreter run to a GPU, or into a project.
Without --candidate the task's best is chosen as `evo report` names it (evo.analysis.best).
DIR may be a sweep folder: the best is then chosen over the rows of every cell, as the sweep's
report names it, and the line says which cell it came from.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pandas as pd

from evo import results
from evo.analysis import best, metrics, parts, sweep_rows
from evo.analysis.speedup_cells import NOT_MEANINGFUL

COLUMNS = metrics.EVALUATION_COLUMNS + ("source",)


@dataclasses.dataclass(frozen=True)
class Exported:
    """A candidate written out: where, which, and the command that scores it again."""

    path: Path
    task: str
    candidate_id: str
    generation: int
    island: int
    operator: str
    speedup: str
    ranking: str  # how it was chosen ("" when named by --candidate)
    eval_command: str
    cell: str | None = None  # the sweep cell it came from (None: a campaign folder)


def _rows(directory: Path) -> pd.DataFrame:
    """Returns the evaluations rows (sources included) of a campaign folder, or of every cell
    of a sweep folder with the cell's name in a `cell` column; raises FileNotFoundError /
    ValueError naming what is missing."""
    if not directory.is_dir():
        raise FileNotFoundError(f"no results folder at {directory}")
    if not (directory / "campaign.json").is_file():
        if not any(directory.glob("*/campaign.json")):
            raise ValueError(f"{directory} holds no campaign results (no campaign.json)")
        return metrics.comparable_speedups(sweep_rows.load_sweep(directory, COLUMNS))
    metrics.read_meta(directory)  # a campaign.json that does not read is named here
    table = parts.PartReader().read(directory / "evaluations", COLUMNS, strict=True).table
    rows = metrics.comparable_speedups(parts.frame(table))
    if rows.empty:
        raise ValueError(f"campaign {directory} has no evaluations yet: no candidate to export")
    return rows


def _folder_of(directory: Path, row: pd.Series) -> Path:
    """Returns the campaign folder a row came from (its cell's, in a sweep folder)."""
    return directory / row["cell"] if "cell" in row else directory


def _by_id(rows: pd.DataFrame, prefix: str, task: str | None) -> pd.Series:
    """Returns the row of the candidate whose id starts with `prefix` (its latest row)."""
    matches = rows[rows["candidate_id"].astype(str).str.startswith(prefix)]
    if task is not None:
        matches = matches[matches["task"] == task]
    where = f" of task {task}" if task else ""
    if matches.empty:
        raise ValueError(f"no candidate{where} has an id starting with {prefix!r} "
                         "(`evo report DIR` names each task's best; ids are in the "
                         "candidate_id column)")
    found = matches.drop_duplicates(["task", "candidate_id"])
    if len(found) > 1:
        named = ", ".join(f"{r.candidate_id[:16]} ({r.task})" for r in found.head(5).itertuples())
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        raise ValueError(f"{len(found)} candidates match {prefix!r}: {named}{more}; give more "
                         "characters of the id" + ("" if task else " or --task"))
    return matches.sort_values(["generation", "island"], kind="stable").iloc[-1]


def _best(rows: pd.DataFrame, task: str | None) -> tuple[pd.Series, dict]:
    """Returns the row of `task`'s best candidate and how it was chosen."""
    tasks = sorted(rows["task"].unique())
    if task is None:
        if len(tasks) > 1:
            raise ValueError(f"the {_kind(rows)} has {len(tasks)} tasks ({', '.join(tasks)}): name "
                             "one with --task, or a candidate with --candidate ID")
        task = tasks[0]
    chosen = best.best_candidates(rows[rows["task"] == task])[task]
    if chosen is None:
        raise ValueError(f"task {task} has no correct candidate to export; name any candidate "
                         "with --candidate ID")
    same = ((rows["task"] == task) & (rows["candidate_id"] == chosen["candidate_id"])
            & (rows["generation"] == chosen["generation"]) & (rows["island"] == chosen["island"]))
    if "cell" in chosen:
        same &= rows["cell"] == chosen["cell"]
    return rows[same].iloc[0], chosen


def _kind(rows: pd.DataFrame) -> str:
    return "sweep" if "cell" in rows else "campaign"


def _eval_command(meta: dict, task: str, path: Path) -> str:
    """Returns the `evo eval` that scores the file (with the campaign's suite and path)."""
    campaign = meta.get("config", {}).get("campaign", {})
    command = ["evo", "eval", task, str(path)]
    if campaign.get("suite") and campaign["suite"] != "builtin":
        command += ["--suite", campaign["suite"]]
        command += ["--path", str(campaign["path"])] if campaign.get("path") else []
    return shlex.join(command)


def export(directory: Path | str, task: str | None = None, candidate: str | None = None,
           out: Path | str | None = None) -> Exported:
    """Writes the best candidate of `task` (the folder's only task when None; in a sweep
    folder the best over every cell), or the candidate whose id starts with `candidate`, to
    `out` (default DIR/exported/<task>-<id>.py); returns what was written. Raises
    FileNotFoundError or ValueError naming the problem (no results, an unknown task, an
    unknown or ambiguous id)."""
    directory = Path(directory)
    rows = _rows(directory)
    if task is not None and task not in set(rows["task"]):
        raise ValueError(f"unknown task {task!r}: this {_kind(rows)}'s tasks are "
                         f"{', '.join(sorted(rows['task'].unique()))}")
    if candidate:
        row = _by_id(rows, candidate, task)
        chosen = best.best_candidates(rows[rows["task"] == row["task"]])[row["task"]]
        is_best = chosen is not None and chosen["candidate_id"] == row["candidate_id"]
        ranking, speedup = ("its task's best" if is_best else ""), _speedup_of(row)
    else:
        row, chosen = _best(rows, task)
        ranking, speedup = chosen["ranking"], best.speedup_text(chosen)
    name = str(row["task"])
    path = Path(out) if out else (
        directory / "exported" / f"{results.slug(name)}-{row['candidate_id'][:12]}.py")
    if not isinstance(row["source"], str):
        raise ValueError(f"candidate {row['candidate_id']} of {name} has no source recorded in "
                         f"{directory / 'evaluations'}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(row["source"])
    meta = metrics.read_meta(_folder_of(directory, row))
    return Exported(path=path, task=name, candidate_id=str(row["candidate_id"]),
                    generation=int(row["generation"]), island=int(row["island"]),
                    operator=str(row["operator"]), speedup=speedup, ranking=ranking,
                    eval_command=_eval_command(meta, name, path),
                    cell=str(row["cell"]) if "cell" in row else None)


def _speedup_of(row: pd.Series) -> str:
    """Returns a row's speedup as `evo report` shows a best one's ("n/a (...)" untimed)."""
    if not row["correct"]:
        return f"n/a (not correct: {row['failure_kind'] or 'failed'})"
    if not row["timing_meaningful"]:
        return NOT_MEANINGFUL
    return f"{row['speedup']:.2f}x" if pd.notna(row["speedup"]) else "n/a (not timed)"


def text(exported: Exported) -> str:
    """Returns the lines `evo export` prints."""
    how = f", {exported.ranking}" if exported.ranking else ""
    cell = f"cell {exported.cell}, " if exported.cell else ""
    return (f"wrote {exported.path}: {exported.task} candidate {exported.candidate_id[:12]} "
            f"({cell}generation {exported.generation}, island {exported.island}, "
            f"{exported.operator}, speedup {exported.speedup}{how})\n"
            f"score it again with: {exported.eval_command}")
