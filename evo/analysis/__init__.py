"""Reading a campaign's Parquet: metrics, pass@k, comparisons of campaigns, figures, the
report, and the join with torch's own timings."""
