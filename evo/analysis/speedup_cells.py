"""How a table shows a figure made from speedups: one rule for timings without meaning.

Under Triton's CPU interpreter a latency times Python, not a kernel (the softmax baseline
against itself read 0.38x-1.08x), so a figure made from such speedups ranks noise: a task's
best speedup, a mean or geomean of best speedups, the expected best of k runs, a fast_p share.
No table shows one as a number. Every table of `evo report` (campaign and sweep) and of the
HTML page writes NOT_MEANINGFUL in its place: the words a best chosen by correctness already
gets (evo.analysis.best), so the tasks table and the best-candidate table say the same. The
Parquet rows and the report's JSON keep the numbers beside `timing_meaningful`
(metrics.timing_meaningful); figures draw them under the caveat and the seeds' noise band.
"""

from __future__ import annotations

from evo.analysis.html_page import number

NOT_MEANINGFUL = "n/a (interpreter)"


def cell(value, kind: str, meaningful: bool | None) -> str:
    """Returns `value` as html_page.number writes it ("2.31x", "33.3%", "-" when missing),
    or NOT_MEANINGFUL when the speedups it is made from were timed without meaning
    (`meaningful` False; None: nothing was timed)."""
    known = meaningful is not None and meaningful == meaningful  # NaN: a task never timed
    if known and not meaningful and value is not None and value == value:
        return NOT_MEANINGFUL
    return number(value, kind)
