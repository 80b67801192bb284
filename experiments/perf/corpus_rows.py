"""Writes a built corpus's replies (`llm_corpus_build.py`: one matched row per model and
task) back as TritonBench rows `{instruction, predict, label}`, one JSONL per model, for
`[operators] generations_from` where thunlp/TritonBench's raw `LLM_generated/` files (whose
labels are TritonBench's original code) are not at hand: each label is then the task's
GEAK-eval file, its instruction GEAK-eval's, and the reply the model's own text, unchanged.

  python3 experiments/perf/corpus_rows.py --corpus .corpus --path GEAK-eval --out DIR [--models a,b]
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(pathlib.Path(__file__).resolve().parent)]

from benchmarks import registry  # noqa: E402
from llm_corpus import load_corpus  # noqa: E402


def tritonbench_rows(corpus_rows: list[dict], tasks: dict) -> dict[str, list[dict]]:
    """Returns {model: rows}; a corpus row of a task the suite lacks, or without a reply, is left out."""
    by_model: dict[str, list[dict]] = {}
    for row in corpus_rows:
        task = tasks.get(row["task"])
        if task is None or not row.get("predict"):
            continue
        by_model.setdefault(row["model"], []).append(
            {"instruction": task.instruction, "predict": row["predict"],
             "label": pathlib.Path(task.source_path).read_text()})
    return by_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--path", required=True, help="the GEAK-eval checkout")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default="", help="comma-separated (default: all)")
    args = parser.parse_args()
    tasks = {pathlib.Path(task.source_path).stem: task
             for task in registry.load("tritonbench-revised", args.path).tasks()}
    rows = load_corpus(args.corpus, [m for m in args.models.split(",") if m] or None)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for model, model_rows in tritonbench_rows(rows, tasks).items():
        with gzip.open(out / f"{model}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in model_rows)
        print(f"{model}: {len(model_rows)} rows -> {out / f'{model}.jsonl.gz'}")


if __name__ == "__main__":
    main()
