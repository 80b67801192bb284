"""`evo sweep SWEEP.toml [--out DIR]`: one campaign per cell of a grid of config overrides.

A sweep file names a base config (a path relative to it, or an inline `[base]` table), a
`[grid]` of `"section.key" = [values...]` (each combination a cell), shared `[set]` overrides:

    [sweep]
    name = "ablation"                 # default: the file's stem; default --out results/<name>
    base = "../quickstart.toml"
    [grid]
    "operators.knowledge" = [true, false]

`--set section.key=value` sets a key in every cell, over [set] (not a [grid] key). Every
cell is validated before any runs: a typo fails at once, not after a night. A cell's folder
is named by its overrides alone, so a rerun skips finished cells, resumes one cut short and
continues one whose `search.generations` or budget cap was raised.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import itertools
import json
import re
import shlex
import sys
import traceback
from pathlib import Path
from typing import Any, Iterable

from evo import config as config_lib
from evo import provenance, results, stopping
from evo.analysis import sweep_rows
from evo.config import ConfigError

_SWEEP_KEYS = {"name", "base"}
_NAME_LIMIT = 100


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A parsed sweep file.

    Attributes:
      name: the sweep's name (default folder results/<name>).
      base: the base config as a parsed TOML dict.
      grid: "section.key" -> the values it takes; cells are the cartesian product.
      fixed: "section.key" -> value set in every cell.
    """

    name: str
    base: dict[str, Any]
    grid: dict[str, tuple[Any, ...]]
    fixed: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Cell:
    """One campaign of a sweep: its folder name, its grid values and its validated config."""

    name: str
    overrides: dict[str, Any]
    config: config_lib.Config

    @property
    def config_hash(self) -> str:
        dumped = json.dumps(self.config.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(dumped.encode()).hexdigest()[:16]


def _check_key(key: str, where: str) -> None:
    section, dot, name = key.partition(".")
    if not dot or section not in config_lib.SECTIONS or not name or "." in name:
        raise ConfigError(f"{where} key {key!r} is not of the form section.key with section one "
                          f"of {', '.join(config_lib.SECTIONS)}")
    allowed = config_lib.SECTIONS[section].model_fields
    if name not in allowed:
        meant = config_lib.did_you_mean(name, allowed)
        raise ConfigError(f"{where} key {key!r}: unknown key{meant}; allowed keys in "
                          f"[{section}]: {', '.join(allowed)}")


def load_sweep(path: Path | str, overrides: Iterable[str] = ()) -> Sweep:
    """Reads and checks a sweep file (not yet its cells); raises ConfigError. `overrides`:
    `evo sweep --set section.key=value`, read as `evo run --set` reads them, set in every
    cell over the file's [set] (a [grid] key is refused: the grid gives it its values)."""
    path = Path(path)
    raw = config_lib.read_toml(path, "sweep file")
    unknown = set(raw) - {"sweep", "base", "grid", "set"}
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {sorted(unknown)}; allowed: [sweep], "
                          "[base], [grid], [set]")
    header = raw.get("sweep", {})
    if set(header) - _SWEEP_KEYS:
        raise ConfigError(f"{path}: unknown key(s) {sorted(set(header) - _SWEEP_KEYS)} in "
                          f"[sweep]; allowed: {', '.join(sorted(_SWEEP_KEYS))}")
    if ("base" in header) == ("base" in raw):
        raise ConfigError(f"{path}: give the base config exactly once, as sweep.base = \"file.toml\" "
                          "or as an inline [base] table")
    base = (raw["base"] if "base" in raw
            else config_lib.read_toml(path.parent / header["base"], "base config"))
    grid = raw.get("grid", {})
    if not grid:
        raise ConfigError(f"{path}: [grid] is missing or empty; add \"section.key\" = [values]")
    for key, values in grid.items():
        _check_key(key, "grid")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"grid key {key!r} must map to a non-empty list, got {values!r}")
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            raise ConfigError(f"grid key {key!r} repeats a value: {values!r}")
    fixed = raw.get("set", {})
    for key in fixed:
        _check_key(key, "set")
        if key in grid:
            raise ConfigError(f"key {key!r} is both in [grid] and in [set]; keep one")
    for override in overrides:
        (section, body), = config_lib.apply_override({}, override).items()
        (key, value), = body.items()
        _check_key(f"{section}.{key}", "--set")
        if f"{section}.{key}" in grid:
            raise ConfigError(f"--set {override}: {section}.{key} is a [grid] key of {path}, "
                              "which gives it its values; change the grid instead")
        fixed = {**fixed, f"{section}.{key}": value}
    return Sweep(name=str(header.get("name", path.stem)), base=base,
                 grid={k: tuple(v) for k, v in grid.items()}, fixed=dict(fixed))


def _value_label(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-") or "empty"


def cell_name(overrides: dict[str, Any]) -> str:
    """Returns a stable folder name for a cell: `key-value` pairs sorted by key, joined by
    `__`; the bare key name unless two sections share it. Over-long names keep a prefix
    and a hash of the overrides."""
    keys = sorted(overrides)
    short = [k.partition(".")[2] for k in keys]
    labels = [k if short.count(s) > 1 else s for k, s in zip(keys, short)]
    name = "__".join(f"{label}-{_value_label(overrides[k])}" for label, k in zip(labels, keys))
    if len(name) > _NAME_LIMIT:
        digest = hashlib.sha256(json.dumps(overrides, sort_keys=True).encode()).hexdigest()[:10]
        name = f"{name[:_NAME_LIMIT - 11]}-{digest}"
    return name


def expand(sweep: Sweep) -> list[Cell]:
    """Returns every cell of the grid with its validated config; raises ConfigError naming
    the first bad cell. Each cell's campaign is named <sweep>-<cell> unless the grid or
    [set] names it."""
    keys = list(sweep.grid)
    cells, seen = [], {}
    for values in itertools.product(*(sweep.grid[k] for k in keys)):
        overrides = dict(zip(keys, values))
        name = cell_name(overrides)
        if name in seen:
            raise ConfigError(f"grid cells {seen[name]} and {overrides} share the folder name "
                              f"{name!r}; make the values distinguishable")
        seen[name] = overrides
        raw = sweep.base
        if "campaign.name" not in overrides and "campaign.name" not in sweep.fixed:
            raw = config_lib.with_key(raw, "campaign.name", f"{sweep.name}-{name}")
        for key, value in {**sweep.fixed, **overrides}.items():
            raw = config_lib.with_key(raw, key, value)
        try:
            cells.append(Cell(name=name, overrides=overrides, config=config_lib.from_dict(raw)))
        except ConfigError as error:
            raise ConfigError(f"sweep cell {name}: {error}") from None
    return cells


def cell_state(folder: Path, cell: Cell) -> str:
    """Returns "pending" (never started), "done" (finished) or "partial" (to resume).

    A finished cell whose config has since changed only in what a resume may change (more
    generations, a bigger budget) is "partial": it continues. Any other change raises
    ConfigError (the engine's resume check): resuming would mix two experiments.
    """
    marker = sweep_rows.read_marker(folder)
    if marker.get("status") == "done" and marker.get("config_hash") == cell.config_hash:
        return "done"
    if not (folder / "campaign.json").exists():
        return "pending"
    try:
        provenance.check_resumable(folder, cell.config)
    except ConfigError as error:
        raise ConfigError(f"sweep cell folder {folder} holds a campaign with another config "
                          f"(use another --out or move it away): {error}") from None
    return "partial"


def _write_marker(folder: Path, cell: Cell, **fields: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"cell": cell.name, "overrides": cell.overrides,
                       "config_hash": cell.config_hash, **fields}, indent=1, default=str)
    results.atomic_write(folder / sweep_rows.CELL_MARKER, lambda tmp: tmp.write_text(text))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_cells(sweep: Sweep, cells: list[Cell], out: Path,
              continue_command: str = "the same command") -> dict[str, str]:
    """Runs the cells not done yet, in grid order; returns cell -> outcome.

    A cell that raises, or that stopped because its LLM calls kept failing, is recorded as
    failed (a later run of the sweep resumes it) and the sweep goes on with the next, so one
    bad night for one cell does not cost the others; a stop signal stops the sweep (the cell
    marked stopped, CellStopped raised). Endpoints were checked before the first cell
    (`_check_endpoints`), so cells skip that check. `continue_command`: what a cell's
    one line names if the local Ray dies under it (the process then exits).
    """
    from evo import campaign  # Ray and torch load only when something runs

    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(
        {"name": sweep.name, "grid": sweep.grid, "set": sweep.fixed,
         "cells": [c.name for c in cells]}, indent=1, default=str))
    outcomes = {}
    for number, cell in enumerate(cells, start=1):
        folder = out / cell.name
        state = cell_state(folder, cell)
        print(f"[sweep {sweep.name}] cell {number}/{len(cells)} {cell.name}: {state}", flush=True)
        if state == "done":
            outcomes[cell.name] = "skipped (done)"
            continue
        _write_marker(folder, cell, status="running", started_at=_now())
        try:
            summary = campaign.run_campaign(cell.config, folder, resume=state == "partial",
                                            check_endpoint=False,
                                            continue_command=lambda: continue_command)
        except stopping.Stopped as stop:  # the sweep stops here; a rerun resumes this cell
            _write_marker(folder, cell, status="stopped", stopped_by=stop.signal.name,
                          stopped_at=_now())
            raise CellStopped(stop, f"cell {number}/{len(cells)} {cell.name}") from None
        except Exception as error:  # noqa: BLE001  (recorded, reported, the sweep goes on)
            _write_marker(folder, cell, status="failed", error=f"{type(error).__name__}: {error}",
                          traceback=traceback.format_exc())
            outcomes[cell.name] = f"failed: {type(error).__name__}: {error}"
            continue
        stopped_by = summary.stopped_by
        if summary.failed:
            why = summary.trip.reason
            _write_marker(folder, cell, status="failed", error=why, stopped_by=stopped_by)
            outcomes[cell.name] = f"failed: its LLM calls kept failing: {why}"
            continue
        _write_marker(folder, cell, status="done", stopped_by=stopped_by, finished_at=_now())
        outcomes[cell.name] = "done" + (f" (stopped by {stopped_by})" if stopped_by else "")
    return outcomes


class CellStopped(stopping.Stopped):
    """A stop signal ended the sweep inside a cell (`where`: "cell 2/4 islands-2")."""

    def __init__(self, stop: stopping.Stopped, where: str):
        super().__init__(stop.signal)
        self.where = where


def _check_tasks(cells: list[Cell]) -> None:
    """Raises ConfigError if a cell names a task its suite lacks (once per selection)."""
    checked = set()
    for cell in cells:
        selection = (cell.config.campaign.suite, cell.config.campaign.path, cell.config.campaign.tasks)
        if selection not in checked:
            config_lib.resolve_tasks(cell.config)
            checked.add(selection)


def _check_endpoints(cells: list[Cell]) -> None:
    """Raises ConfigError if an LLM endpoint of the sweep cannot serve its model (once each)."""
    from evo import preflight

    checked = set()
    for cell in cells:
        ops = cell.config.operators
        endpoint = (ops.mode, ops.base_url, ops.model, ops.api_key_env)
        if endpoint not in checked:
            try:
                preflight.check(cell.config)
            except ConfigError as error:
                raise ConfigError(f"sweep cell {cell.name}: {error}") from None
            checked.add(endpoint)


def main(sweep_file: Path | str, out: Path | str | None = None,
         check_endpoints: bool = True, overrides: Iterable[str] = ()) -> int:
    """What `evo sweep` calls: validate every cell (and, unless `check_endpoints` is False,
    its LLM endpoint), run what is left, summarize; returns the exit status. `overrides`:
    `--set section.key=value`, applied to every cell (`load_sweep`).

    Exits non-zero (SystemExit) when any cell failed, after running all the others. A stop
    signal (Ctrl-C, SIGTERM) stops the cell running at its last checkpoint, marks it
    "stopped", prints one line naming it and the command that continues, and returns 130/143.
    """
    overrides = list(overrides)
    sweep = load_sweep(sweep_file, overrides)
    cells = expand(sweep)
    _check_tasks(cells)
    if check_endpoints:
        _check_endpoints(cells)
    folder = Path(out) if out is not None else Path("results") / sweep.name
    again = shlex.join(["evo", "sweep", str(sweep_file)] + (["--out", str(out)] if out else [])
                       + [part for override in overrides for part in ("--set", override)]
                       + ([] if check_endpoints else ["--no-preflight"]))
    with stopping.listening():
        try:
            outcomes = run_cells(sweep, cells, folder, again)
        except CellStopped as stop:
            print(f"sweep {sweep.name} stopped by {stop.signal.name} in {stop.where} (the cell "
                  f"keeps its last checkpoint); run the same command to continue: {again}",
                  file=sys.stderr, flush=True)
            return stop.exit_status
    for name, outcome in outcomes.items():
        print(f"{name}: {outcome}")
    failed = [name for name, outcome in outcomes.items() if outcome.startswith("failed")]
    if failed:
        raise SystemExit(f"error: {len(failed)} of {len(cells)} cells failed ({', '.join(failed)}; "
                         f"tracebacks in their {sweep_rows.CELL_MARKER}); run the same command "
                         "again to retry them")
    print(f"sweep {sweep.name}: {len(cells)} cells in {folder}; compare them with `evo report {folder}`")
    return 0
