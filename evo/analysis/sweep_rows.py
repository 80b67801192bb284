"""A sweep folder's cells and rows: `evo.analysis.load_sweep(DIR)` reads every evaluation of
every cell into one pandas DataFrame, each cell's grid overrides as columns.

`pd.read_parquet(DIR)` cannot: it walks into figures/*.png, campaign.json and checkpoints.
Here each cell's evaluations/ parts are read whole (evo.analysis.parts), one cell after
another, and tagged with the cell's folder name, its marker's status and overrides
("search.islands" = 2), so `df.groupby("search.islands")` is one line. Light on purpose
(no plotting): `evo sweep` reads cell markers through it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from evo.analysis import parts

CELL_MARKER = "sweep_cell.json"
"""Written by evo.sweep into each cell folder: the cell's overrides and how its run ended."""


def find_campaigns(folder: Path) -> list[Path]:
    """Returns the campaign folders directly under a sweep folder, sorted by name."""
    if not folder.is_dir():
        raise FileNotFoundError(f"no results folder at {folder}")
    found = sorted(p for p in folder.iterdir() if (p / "campaign.json").is_file())
    if not found:
        raise ValueError(f"{folder} holds no campaign: neither it nor any subfolder has a "
                         "campaign.json (is it the right folder? has the run started?)")
    return found


def read_marker(cell: Path) -> dict[str, Any]:
    """Returns a cell's sweep marker, or {} for a campaign not made by evo sweep."""
    marker = cell / CELL_MARKER
    return json.loads(marker.read_text()) if marker.is_file() else {}


def load_sweep(folder: Path | str, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Returns every evaluation row of every cell of a sweep folder (`columns` of them, all
    when None), with `cell`, `status` and one column per override key. A cell without rows
    yet adds none; a part that does not read raises ValueError naming it."""
    reader, frames = parts.PartReader(), []
    for path in find_campaigns(Path(folder)):
        table = parts.frame(reader.read(path / "evaluations", columns, strict=True).table)
        if table.empty:
            continue
        marker = read_marker(path)
        tags = {"cell": path.name, "status": marker.get("status", "unknown"),
                **marker.get("overrides", {})}
        frames.append(table.drop(columns="written_at").assign(**tags))
    if not frames:
        raise ValueError(f"sweep {folder}: no cell has evaluation rows yet")
    return pd.concat(frames, ignore_index=True)
