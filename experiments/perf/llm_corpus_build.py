"""Builds the corpus of real LLM output that `llm_corpus.py` scores: TritonBench-G replies of
five models, published by thunlp/TritonBench (`LLM_generated/`, Apache-2.0; not ours to commit:
the corpus folder is git-ignored, `.corpus/` by default).

The sets (`SETS`): Qwen2.5-72B-Instruct and gpt-4o on the simple instructions
(`Bench_G_general_purpose/*_simp.jsonl`), the two coder-specific models' plain runs (no
retrieval, no fine-tuning: `Bench_G_coder_specofic/qwen_092.jsonl`, `deepseek_094.jsonl`), and
claude-3.5-sonnet on the complex instructions (`*_comp.jsonl`: the set whose
int8_dequant_matmul and chunk_retention_ops replies stalled the evaluator, issue 49). Each
row there is {instruction or prompt, predict, label}, label being the gold kernel code; a row's
task is the TritonBench-G file whose code is that label, as GEAK-eval finds it (the entry of its
instruction file whose `output` equals the label), else as TritonBench's own scripts do (the
label, its end-of-text tokens removed, inside one entry's output: the DeepSeek set's labels are
cut short; two such fit two files, told apart by their instruction text).
Writes OUT/<set>.jsonl.gz, rows {model, task, file, row, match, source, predict}: `source` is
the code GEAK-eval takes from the reply (`geak_correctness.extract_code`; null: none), what
both judges are given; OUT/MANIFEST.json says where each set came from; and, unless
--no-geak-copy, OUT/geak/TritonBench_G_v1/ (the gold files) for a machine without ../shared.
  python experiments/perf/llm_corpus_build.py --snapshot TRITONBENCH_GIT_OR_CHECKOUT \
      --geak $KERNELEVO_EXTERNAL/GEAK-eval [--out .corpus]
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(pathlib.Path(__file__).resolve().parent)]

import geak_correctness  # noqa: E402
from benchmarks.external import common, tritonbench  # noqa: E402
from operators import label_matching  # noqa: E402

SETS = {
    "qwen2.5-72b-instruct": "LLM_generated/Bench_G_general_purpose/Qwen2.5-72B-Instruct_simp.jsonl",
    "gpt-4o": "LLM_generated/Bench_G_general_purpose/output_gpt-4o_simp.jsonl",
    "qwen-coder": "LLM_generated/Bench_G_coder_specofic/qwen_092.jsonl",
    "deepseek-coder": "LLM_generated/Bench_G_coder_specofic/deepseek_094.jsonl",
    "claude-3.5-sonnet-comp": "LLM_generated/Bench_G_general_purpose/output_claude-3-5-sonnet-20240620_comp.jsonl",
}
"""Set name -> its file in the TritonBench repository."""


class Snapshot:
    """A TritonBench repository: a checkout, or a bare git directory read with `git show`."""

    def __init__(self, path: str):
        self.path = pathlib.Path(path)
        self.is_checkout = (self.path / "LLM_generated").is_dir()

    def read(self, name: str) -> str:
        if self.is_checkout:
            return (self.path / name).read_text(encoding="utf-8")
        return self._git("show", f"HEAD:{name}")

    def describe(self, name: str) -> dict:
        """Returns where a file came from: the commit and blob (git), or the path."""
        if self.is_checkout:
            return {"path": name}
        return {"path": name, "commit": self._git("rev-parse", "HEAD").strip(),
                "blob": self._git("rev-parse", f"HEAD:{name}").strip()}

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", f"--git-dir={self.path}", *args], check=True,
                              capture_output=True, text=True).stdout


def build_set(name: str, lines: str, entries: dict[str, dict]) -> list[dict]:
    """Returns a set's corpus rows from its JSONL text, each matched to the gold file whose
    instruction-file entry's `output` its label is (`operators.label_matching`)."""
    items = [json.loads(line) for line in lines.splitlines() if line.strip()]
    references = [label_matching.Reference(file, (entry.get("output") or "",),
                                           entry.get("instruction") or "")
                  for file, entry in entries.items()]
    matches = label_matching.match_rows(items, references, one_row_each=True)
    rows = []
    for index, (item, match) in enumerate(zip(items, matches)):
        predict = item.get("predict") or ""
        rows.append({"model": name, "task": match.name and pathlib.Path(match.name).stem,
                     "file": match.name, "row": index, "match": match.how,
                     "source": geak_correctness.extract_code(predict), "predict": predict})
    return rows


def write_rows(path: pathlib.Path, rows: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True, help="thunlp/TritonBench: a checkout or a bare git dir")
    parser.add_argument("--geak", required=True, help="GEAK-eval checkout (or its TritonBench_G_v1 folder)")
    parser.add_argument("--out", default=str(ROOT / ".corpus"), help="corpus folder (git-ignored)")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated set names")
    parser.add_argument("--no-geak-copy", action="store_true", help="do not copy the gold files into OUT/geak")
    args = parser.parse_args()
    folder = common.find_folder(args.geak, tritonbench.SUITE, tritonbench.SUBPATHS)
    entries = common.read_instructions(folder, tritonbench.INSTRUCTION_FILES)
    if not entries:
        parser.error(f"no {tritonbench.INSTRUCTION_FILES[0]} beside or above {folder}: it maps labels to files")
    entries = {name: entry for name, entry in entries.items() if (folder / name).is_file()}
    snapshot, out = Snapshot(args.snapshot), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"source": "github.com/thunlp/TritonBench LLM_generated/ (Apache-2.0)", "sets": {}}
    for name in args.sets.split(","):
        rows = build_set(name, snapshot.read(SETS[name]), entries)
        write_rows(out / f"{name}.jsonl.gz", rows)
        counts = {how: sum(row["match"] == how for row in rows) for how in label_matching.HOWS}
        manifest["sets"][name] = {**snapshot.describe(SETS[name]), "rows": len(rows), **counts,
                                  "no_code": sum(row["source"] is None for row in rows),
                                  "tasks": len({row["task"] for row in rows if row["task"]})}
        print(f"{name:22} {len(rows):4d} rows  {counts}  no code: {manifest['sets'][name]['no_code']}")
    if not args.no_geak_copy:
        target = out / "geak" / folder.name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
        manifest["geak_copy"] = str(target.relative_to(out))
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
