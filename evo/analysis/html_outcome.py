"""The page of a campaign without evaluations: what ended it, and what its LLM calls failed with.

It shows the report `evo report DIR` prints for such a campaign (evo.analysis.outcome): the
stop campaign.json records and the failed LLM calls by kind, each with its latest error. A
campaign that records no end of a run may still be running: its live page (`evo view`) says
it waits for the first generation, and shows the failures so far.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evo.analysis import outcome
from evo.analysis.html_lineage import TRACE_CHARS
from evo.analysis.html_page import esc, notes, table


def page(folder: Path, live: bool) -> tuple[str, str]:
    """Returns the title and body of the page of a campaign that holds no evaluation."""
    report = outcome.without_evaluations(folder)
    waiting = live and report["stop"] is None
    state = ("Nothing to show yet: waiting for the first generation (no candidate scored so "
             "far)." if waiting else "No candidate was scored: this campaign has no evaluations.")
    body = (f"<h1>Campaign {esc(report['campaign'])}</h1><p class=\"meta\">{esc(report['path'])}"
            f"</p><p class=\"outcome\">{esc(state)}</p>" + _stop(report["stop"])
            + _llm_failures(report["llm"]) + notes(report["notes"]))
    return f"Campaign {report['campaign']}", body


def _stop(stop: dict[str, Any] | None) -> str:
    """Returns how the last run ended, as campaign.json records it ("" when it does not)."""
    if stop is None:
        return ""
    at = stop["at"][:19].replace("T", " ")
    details = "".join(f"<li>{esc(line)}</li>" for line in stop["details"])
    return (f"<h2>Last run</h2><p class=\"stop\">{esc(stop['reason'])} (at {esc(at)} UTC)</p>"
            + (f"<ul>{details}</ul>" if details else ""))


def _llm_failures(llm: dict[str, Any]) -> str:
    """Returns the LLM calls' failures by kind, the commonest first, each with its latest error."""
    if not llm["calls"]:
        return "<h2>LLM calls</h2><p>No LLM call was recorded.</p>"
    if not llm["failed"]:
        return f"<h2>LLM calls</h2><p>{llm['calls']} calls, none failed.</p>"
    rows = [(esc(kind), str(failed["calls"]),  # escaped here: the cells hold markup
             f'<pre class="error">{esc(failed["example"][:TRACE_CHARS])}</pre>')
            for kind, failed in llm["kinds"].items()]
    return (f"<h2>LLM calls: {llm['calls']}, {llm['failed']} failed</h2>"
            + table(["failure kind", "calls", "latest error"], rows, left=3, raw=True))
