"""The shell of the HTML page: its style, its script, and the helpers every section uses.

The page opens with no network: style and script are inline and the Content-Security-Policy
forbids fetching anything but the page's own server (`connect-src 'self'`, used only by the
live page of `evo view` to poll `state.json`). Everything shown that comes from a results
folder (task names, an LLM's strategy text, sources, tracebacks) is escaped here or by the
caller with `esc`: a strategy is model output, and the page must not run it.
"""

from __future__ import annotations

import html
from typing import Iterable, Sequence

POLL_MS = 1500
"""How often a live page asks its server whether a part has landed."""

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; connect-src 'self'")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;
  background:#f6f7f9;}
#content{max-width:1400px;margin:0 auto;padding:12px 24px 48px}
h1{font-size:22px;margin:12px 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
.meta{color:#5b6472;margin:0 0 8px}
.note{background:#fff7e0;border-left:3px solid #e0a800;padding:4px 10px;margin:4px 0}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:8px 14px;min-width:120px}
.card b{display:block;font-size:18px}
.card span{color:#5b6472;font-size:12px}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #d5d9e0;padding:3px 8px;text-align:right}
th{background:#eef0f4}
td.l,th.l{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:10px}
svg.chart{background:#fff;border:1px solid #d5d9e0;border-radius:6px}
svg .title{font-size:12px;font-weight:600;fill:#1d2430}
svg .tick,svg .legend{font-size:10.5px;fill:#3b4350}
svg .axis-label{font-size:11px;fill:#5b6472}
svg .empty{font-size:12px;fill:#8a93a0}
svg .grid{stroke:#eceef2}
svg .axis{stroke:#8a93a0}
svg .plot{fill:none;stroke:#b7bdc7}
svg .reference{stroke:#7f7f7f;stroke-dasharray:4 3}
svg .band{fill:#9aa3b0;fill-opacity:.25;stroke:none}
.lineage{display:grid;grid-template-columns:minmax(280px,420px) 1fr;gap:12px;align-items:start}
.tree{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:6px 8px;max-height:640px;
  overflow:auto;}
.tree ol{list-style:none;margin:0;padding-left:14px;border-left:2px solid #d5d9e0}
.tree>ol{border-left:none;padding-left:0}
.tree li{margin:3px 0}
.branch{margin-left:12px}
.hint{color:#5b6472;font-size:12px}
.node{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f5f8;
  border:1px solid #c9ced6;border-radius:4px;padding:2px 6px;cursor:pointer;text-align:left;
  width:100%;}
.node:hover{background:#e6ebf2}
.node.selected{background:#dbe8ff;border-color:#3b73d9}
.node.best{font-weight:700}
.node.failed{color:#a11}
.ref{font-size:12px;color:#3b73d9;cursor:pointer}
.step-detail{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:8px 12px;
  min-width:0;}
pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#fafbfc;
  border:1px solid #e3e6eb;padding:6px 8px;overflow:auto;max-height:520px;margin:4px 0;}
.strategy{white-space:pre-wrap}
pre.error{white-space:pre-wrap;overflow-wrap:anywhere;max-width:880px}
.diff .add{background:#e6ffed;color:#045a1a;display:block}
.diff .del{background:#ffeef0;color:#8a0b1d;display:block}
.diff .hunk{color:#6f42c1;display:block}
.diff .file{color:#5b6472;display:block}
#live-status{position:fixed;top:6px;right:10px;background:#fff;border:1px solid #d5d9e0;
  border-radius:12px;padding:2px 10px;font-size:12px;color:#5b6472;}
#live-status.off{color:#a11;border-color:#a11}
"""

SCRIPT = """
(function () {
  "use strict";
  var content = document.getElementById("content");
  function select(key) {
    var button = content.querySelector('.node[data-node="' + key + '"]');
    if (!button) { return; }
    var pane = button.closest(".lineage");
    pane.querySelectorAll(".node.selected").forEach(function (b) {
      b.classList.remove("selected"); b.setAttribute("aria-pressed", "false"); });
    pane.querySelectorAll(".step-detail").forEach(function (d) { d.hidden = true; });
    button.classList.add("selected"); button.setAttribute("aria-pressed", "true");
    var detail = document.getElementById("detail-" + key);
    if (detail) { detail.hidden = false; }
  }
  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-node]");
    if (target && content.contains(target)) {
      event.preventDefault(); select(target.getAttribute("data-node")); }
  });
  if (content.getAttribute("data-live") !== "1") { return; }
  var status = document.getElementById("live-status");
  status.hidden = false;
  function selected() {
    return Array.prototype.map.call(content.querySelectorAll(".node.selected"), function (b) {
      return [b.closest(".lineage").getAttribute("data-task"), b.getAttribute("data-cid")]; });
  }
  function show(text, off) { status.textContent = text; status.className = off ? "off" : ""; }
  function refresh() {
    var keep = selected();
    return fetch("./", {cache: "no-store"}).then(function (r) { return r.text(); })
    .then(function (text) {
      var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("content");
      if (!fresh) { return; }
      content.innerHTML = fresh.innerHTML;
      content.setAttribute("data-stamp", fresh.getAttribute("data-stamp"));
      keep.forEach(function (pair) {
        var pane = Array.prototype.find.call(content.querySelectorAll(".lineage"), function (p) {
          return p.getAttribute("data-task") === pair[0]; });
        var b = pane && Array.prototype.find.call(pane.querySelectorAll(".node"), function (n) {
          return n.getAttribute("data-cid") === pair[1]; });
        if (b) { select(b.getAttribute("data-node")); }
      });
      show("live: updated " + new Date().toLocaleTimeString());
    });
  }
  function poll() {
    fetch("state.json", {cache: "no-store"}).then(function (r) { return r.json(); })
    .then(function (state) {
      if (state.stamp !== content.getAttribute("data-stamp")) { return refresh(); }
      show("live: up to date " + new Date().toLocaleTimeString());
    }).catch(function () { show("live: server not answering", true); });
  }
  show("live");
  setInterval(poll, %(poll_ms)d);
})();
""" % {"poll_ms": POLL_MS}


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def document(title: str, body: str, stamp: str, live: bool) -> str:
    """Returns the whole page: `body` inside #content, stamped with the folder's fingerprint."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f'<div id="live-status" hidden></div>'
            f'<div id="content" data-stamp="{esc(stamp)}" data-live="{1 if live else 0}">'
            f"{body}</div><script>{SCRIPT}</script></body></html>\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1,
          raw: bool = False) -> str:
    """Returns an HTML table; the first `left` columns align left; cells are escaped unless
    `raw` (the caller escaped them)."""
    cell = (lambda v: v) if raw else esc
    head = "".join(f'<th class="l">{esc(h)}</th>' if i < left else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="l">{cell(v)}</td>' if i < left else
                                    f"<td>{cell(v)}</td>" for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cards(items: Sequence[tuple[str, str]]) -> str:
    return '<div class="cards">' + "".join(
        f"<div class=\"card\"><b>{esc(value)}</b><span>{esc(label)}</span></div>"
        for label, value in items) + "</div>"


def notes(lines: Iterable[str]) -> str:
    return "".join(f'<p class="note">{esc(line)}</p>' for line in lines)


def number(value, kind: str = "f") -> str:
    """Formats a metric: percent, speedup (x), USD, or plain; '-' for missing."""
    if value is None or value != value:
        return "-"
    if kind == "%":
        return f"{100 * value:.1f}%"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "$":
        return f"${value:,.4f}"
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.3g}"


def diff_block(lines: Sequence[str]) -> str:
    """Returns a unified diff as a <pre> whose lines are colored by kind."""
    out = []
    for line in lines:
        kind = ("file" if line.startswith(("+++", "---")) else "hunk" if line.startswith("@@")
                else "add" if line.startswith("+") else "del" if line.startswith("-") else "")
        text = esc(line) or " "
        out.append(f'<span class="{kind}">{text}</span>' if kind else text + "\n")
    return '<pre class="diff">' + "".join(out) + "</pre>"
