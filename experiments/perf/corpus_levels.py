"""Issue 49's verdicts on the public TritonBench-G replies, by difficulty level: ours beside
GEAK-eval's harness on the same replies (call and exec accuracy per model and level), the
layout of the GEAK paper's Table 2 without its speedup column (the replies were judged, not
timed). Reads `llm_corpus.py` JSONs; a reply judged in more than one is counted once (the
last file's verdict), so the union of calls that resumed one another is read as one run.

  python experiments/perf/corpus_levels.py experiments/perf/data/llm_corpus_h200_2026-11-29_{a,c}.json.gz
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import registry  # noqa: E402

ACCURACIES = ("project_call", "geak_call", "project_correct", "geak_exec")
"""The row fields counted, in the table's order: call and exec accuracy, ours then GEAK's."""


def replies(paths: list[str]) -> dict[tuple[str, str, str], dict]:
    """Returns every judged reply, keyed by (model, task, row): the last file's wins."""
    found = {}
    for path in paths:
        opened = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
        with opened as handle:
            for row in json.load(handle)["rows"]:
                if str(row.get("done")) == "True":
                    found[(row["model"], row["task"], str(row["row"]))] = row
    return found


def by_level(found: dict, levels: dict[str, int]) -> list[dict]:
    """Returns one line per model and level (and "all"): replies, each accuracy in percent,
    and how many replies the two judges disagree on."""
    groups = collections.defaultdict(list)
    for (model, task, _), row in found.items():
        level = levels.get(task)
        groups[(model, f"L{level}" if level else "L?")].append(row)
        groups[(model, "all")].append(row)
    lines = []
    for (model, level), rows in sorted(groups.items()):
        line = {"model": model, "level": level, "replies": len(rows)}
        for field in ACCURACIES:
            line[field] = 100.0 * sum(str(row.get(field)) == "True" for row in rows) / len(rows)
        line["disagree"] = sum(str(row.get("agree")) != "True" for row in rows)
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="llm_corpus.py JSONs (.json or .json.gz)")
    parser.add_argument("--geak", default=os.path.join(
        os.environ.get("KERNELEVO_EXTERNAL", str(ROOT.parent / "shared" / "external")), "GEAK-eval"),
        help="the GEAK-eval checkout that gives each task's difficulty")
    args = parser.parse_args()
    if not pathlib.Path(args.geak).is_dir():
        parser.error(f"no GEAK-eval checkout at {args.geak} (set KERNELEVO_EXTERNAL or --geak)")
    levels = {task.name: task.difficulty
              for task in registry.load("tritonbench-revised", args.geak).tasks()}
    print("| model | level | replies | ours call % | GEAK call % | ours exec % | GEAK exec % | disagree |")
    print("|---|---|---|---|---|---|---|---|")
    for line in by_level(replies(args.runs), levels):
        print(f"| {line['model']} | {line['level']} | {line['replies']} | "
              + " | ".join(f"{line[field]:.1f}" for field in ACCURACIES) + f" | {line['disagree']} |")


if __name__ == "__main__":
    main()
