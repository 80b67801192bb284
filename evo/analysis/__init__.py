"""Reading a campaign's Parquet: metrics, pass@k, comparisons of campaigns, figures, the
report, and the join with torch's own timings. `load_sweep(DIR)` reads a sweep folder's
rows into one DataFrame (evo.analysis.sweep_rows)."""

from evo.analysis.sweep_rows import load_sweep

__all__ = ["load_sweep"]
