"""Scores a corpus of real LLM output (TritonBench-G replies of four models, built by
`llm_corpus_build.py`) as tritonbench-revised candidates through the project's Evaluator, the
static gate on, and through GEAK-eval's own correctness check on the same code
(`geak_correctness.py`); prints one table row per model and every disagreement.

What it measures: how often our exec verdict (`correct`) agrees with GEAK-eval's; how many we
accept that GEAK-eval marks wrong (goal: none); how many the gate refuses that GEAK-eval marks
correct (goal: at most 2% of those); whether any evaluation outlived a limit plus the
watchdog's grace (`overruns`: its harness run, preparation or timing pass; and the whole walk
against `walk_bound_s`, watched while it runs), each named as it is found (goal: none).

Run on the GPU machine from the repository root, `.corpus/` carried (it holds the gold files
as well, `.corpus/geak/TritonBench_G_v1/`); --max-wall-s below a command limit leaves time to
write what is done:
  source experiments/perf/gpu_env.sh .wheelhouse
  python3 experiments/perf/llm_corpus.py --corpus .corpus --geak .corpus/geak --workers 10 \\
      --geak-workers 6 --max-wall-s 540 --out $OUT/llm_corpus.json --dump $OUT/disagreements
Writes FILE (JSON: settings, summary, rows) and FILE with .csv (one row per reply). GEAK-eval's
check runs the replies unsandboxed, as GEAK-eval does; `--gate-only` needs no device.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import dataclasses
import gzip
import json
import os
import pathlib
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(pathlib.Path(__file__).resolve().parent)]

import geak_correctness  # noqa: E402
from benchmarks.external import common, tritonbench  # noqa: E402

GOAL_AGREE = 0.99
"""Issue 49: our verdicts agree with GEAK-eval's TB correctness check on at least 99% of replies."""
GOAL_GATE_REFUSED = 0.02
"""Of the replies GEAK-eval marks correct, the share the gate may refuse."""


def _open_text(path: pathlib.Path):
    """Opens a text file for reading, gunzipped when its name ends in .gz."""
    return (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8")


def load_corpus(folder: str, models: list[str] | None = None, limit: int | None = None) -> list[dict]:
    """Returns the corpus rows of `folder` (`<model>.jsonl` or `.jsonl.gz`), the first `limit`
    of each model, only `models` when given; raises FileNotFoundError naming what is missing."""
    root = pathlib.Path(folder)
    files = sorted(root.glob("*.jsonl")) + sorted(root.glob("*.jsonl.gz"))
    if not files:
        raise FileNotFoundError(f"no <model>.jsonl(.gz) in {root} (build it with llm_corpus_build.py)")
    by_model: dict[str, list[dict]] = {}
    for path in files:
        with _open_text(path) as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    by_model.setdefault(row["model"], []).append(row)
    unknown = sorted(set(models or ()) - set(by_model))
    if unknown:
        raise FileNotFoundError(f"no corpus rows for {', '.join(unknown)}; {root} has {', '.join(sorted(by_model))}")
    chosen = [model for model in sorted(by_model) if not models or model in models]
    return [row for model in chosen for row in by_model[model][:limit]]


@dataclasses.dataclass
class Verdicts:
    """One reply's two verdicts, side by side (a CSV row)."""

    model: str
    task: str | None
    row: int
    project_stage: str = ""
    project_kind: str | None = None
    project_call: bool = False
    project_correct: bool = False
    project_detail: str = ""
    wall_s: float = 0.0
    check_s: float = 0.0
    over_limit: str = ""  # what ran past its limit plus grace (`overruns`), if anything
    geak_call: bool = False
    geak_exec: bool = False
    geak_reason: str = ""
    geak_s: float = 0.0
    done: bool = False

    @property
    def agree(self) -> bool:
        return self.project_correct == self.geak_exec

    @property
    def kind(self) -> str:
        """Returns "agree", or how the two disagree."""
        if self.agree:
            return "agree"
        if self.project_correct:
            return "accepted_geak_wrong"
        return "gate_refused_geak_correct" if self.project_stage == "gate" else "rejected_geak_correct"


def _detail(trace: str) -> str:
    """Returns a failure's first and last lines (the rule or exception, and where)."""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0][:200] if len(lines) == 1 else f"{lines[0][:160]} ... {lines[-1][:200]}"


def overruns(evaluation, limits) -> list[str]:
    """Returns what of an external candidate's walk ran past its limit plus the watchdog's
    grace: the harness run (`check_s`), the timing pass's preparation (in `compile_s`) or
    the timing pass (`bench_s`)."""
    from fitness.processes import watchdog

    spans = (("harness run", evaluation.check_s, limits.harness_run_s),
             ("preparation", evaluation.compile_s, limits.bench_s),
             ("timing pass", evaluation.bench_s, limits.bench_s))
    return [f"{name} {seconds:.1f} s > {limit_s:g} + {watchdog.GRACE_S:g} s"
            for name, seconds, limit_s in spans if seconds > limit_s + watchdog.GRACE_S]


def walk_bound_s(limits) -> float:
    """Returns how long one external candidate's evaluation may take at most: the task's
    reference outputs (another walk may be computing them), its harness run, its timing
    pass's preparation and run, and the reference's timing pass, each to its limit plus the
    watchdog's grace, once more for a walk tried again after a neighbour's death."""
    from fitness.processes import watchdog

    once_s = limits.reference_s + limits.harness_run_s + 3 * limits.bench_s + 4 * watchdog.GRACE_S
    return 2 * once_s


def score_project(evaluator, task, row: dict, verdicts: Verdicts, limits) -> None:
    """Fills in the project's verdict on the row's code as a candidate of `task`."""
    from evo.records import make_candidate
    from fitness.eval_cli import stage_name

    start = time.monotonic()
    evaluation = evaluator.evaluate(task, make_candidate(task.name, row["source"] or ""))
    verdicts.wall_s = round(time.monotonic() - start, 2)
    verdicts.project_stage = stage_name(evaluation)
    verdicts.project_kind = evaluation.failure_kind
    verdicts.project_call = evaluation.call_ok
    verdicts.project_correct = evaluation.correct
    verdicts.project_detail = "" if evaluation.correct else _detail(evaluation.error_trace)
    verdicts.check_s = round(evaluation.check_s, 2)
    verdicts.over_limit = "; ".join(overruns(evaluation, limits))


def score_geak(checker, gold_path: str, row: dict, verdicts: Verdicts) -> None:
    """Fills in GEAK-eval's verdict on the same code."""
    start = time.monotonic()
    if row["source"] is None:
        verdict = geak_correctness.Verdict(False, False, "Code is empty")
    else:
        verdict = checker.check(None, gold_path, code=row["source"])
    verdicts.geak_call, verdicts.geak_exec = verdict.call_ok, verdict.exec_ok
    verdicts.geak_reason = verdict.reason
    verdicts.geak_s = round(time.monotonic() - start, 2)


def summarize(records: list[Verdicts]) -> list[dict]:
    """Returns one summary per model, then one over all ("all"), of the rows with a task."""
    models = sorted({record.model for record in records})
    return [_summary(model, [r for r in records if r.model == model]) for model in models] + \
        [_summary("all", records)]


def _summary(name: str, records: list[Verdicts]) -> dict:
    scored = [r for r in records if r.task and r.done]
    n = len(scored) or 1
    geak_correct = sum(r.geak_exec for r in scored)
    kinds = [r.kind for r in scored]
    return {"model": name, "rows": len(records), "n": len(scored),
            "unmatched": sum(not r.task for r in records),
            "no_verdict": sum(bool(r.task) and not r.done for r in records),
            "project_call": sum(r.project_call for r in scored) / n,
            "geak_call": sum(r.geak_call for r in scored) / n,
            "project_exec": sum(r.project_correct for r in scored) / n,
            "geak_exec": geak_correct / n,
            "agree": kinds.count("agree") / n,
            "accepted_geak_wrong": kinds.count("accepted_geak_wrong"),
            "gate_refused_geak_correct": kinds.count("gate_refused_geak_correct"),
            "rejected_geak_correct": kinds.count("rejected_geak_correct"),
            "geak_correct": geak_correct,
            "over_limit": sum(bool(r.over_limit) for r in records if r.task),
            "max_wall_s": max((r.wall_s for r in scored), default=0.0),
            "max_check_s": max((r.check_s for r in scored), default=0.0)}


COLUMNS = (("model", "{}", "model"), ("n", "{}", "n"),
           ("project_call", "{:.1%}", "ours call"), ("geak_call", "{:.1%}", "GEAK call"),
           ("project_exec", "{:.1%}", "ours exec"), ("geak_exec", "{:.1%}", "GEAK exec"),
           ("agree", "{:.1%}", "agree"), ("accepted_geak_wrong", "{}", "ok/GEAK-no"),
           ("gate_refused_geak_correct", "{}", "gate/GEAK-ok"),
           ("rejected_geak_correct", "{}", "no/GEAK-ok"), ("over_limit", "{}", "over limit"),
           ("max_wall_s", "{:.1f}", "max wall s"), ("max_check_s", "{:.1f}", "max check s"))
"""(summary key, format, title): "ok/GEAK-no" ours correct, GEAK-eval's wrong; "gate/GEAK-ok"
refused by the gate, GEAK-eval's correct; "no/GEAK-ok" refused later in the cascade."""


def table(summaries: list[dict]) -> str:
    """Returns the per-model table, one line per summary under a header, columns aligned."""
    titles = [title for _, _, title in COLUMNS]
    cells = [[fmt.format(summary[key]) for key, fmt, _ in COLUMNS] for summary in summaries]
    widths = [max(len(text) for text in [title] + [row[i] for row in cells])
              for i, title in enumerate(titles)]

    def line(texts: list[str]) -> str:
        return " ".join(text.ljust(width) if i == 0 else text.rjust(width)
                        for i, (text, width) in enumerate(zip(texts, widths)))

    return "\n".join([line(titles)] + [line(row) for row in cells])


def goals(overall: dict) -> list[str]:
    """Returns one line per goal: met or not, with the numbers."""
    refused_share = overall["gate_refused_geak_correct"] / max(1, overall["geak_correct"])
    marks = {True: "met", False: "NOT MET"}
    return [f"agree >= {GOAL_AGREE:.0%}: {overall['agree']:.1%} ({marks[overall['agree'] >= GOAL_AGREE]})",
            f"accepted that GEAK marks wrong = 0: {overall['accepted_geak_wrong']} "
            f"({marks[overall['accepted_geak_wrong'] == 0]})",
            f"gate-refused of GEAK-correct <= {GOAL_GATE_REFUSED:.0%}: {overall['gate_refused_geak_correct']}"
            f"/{overall['geak_correct']} = {refused_share:.1%} ({marks[refused_share <= GOAL_GATE_REFUSED]})",
            f"evaluations past a limit + grace = 0: {overall['over_limit']} ({marks[overall['over_limit'] == 0]})",
            f"both verdicts on every reply with a task: {overall['n']} of {overall['n'] + overall['no_verdict']} "
            f"({overall['unmatched']} replies matched no task)"]


def disagreement_lines(records: list[Verdicts]) -> list[str]:
    """Returns one line per disagreement: both verdicts and why."""
    return [f"  {r.kind:26} {r.model}/{r.task} (row {r.row}): ours {r.project_stage} "
            f"{r.project_kind or 'correct'}: {r.project_detail or '-'} | GEAK call={r.geak_call} "
            f"exec={r.geak_exec}: {r.geak_reason or '-'}"
            for r in records if r.task and r.done and not r.agree]


def over_limit_lines(records: list[Verdicts]) -> list[str]:
    """Returns one line per evaluation past a limit plus grace, by name, with what ran over."""
    return [f"  {r.model}/{r.task} (row {r.row}): {r.over_limit}" for r in records if r.over_limit]


def write_outputs(path: str, info: dict, records: list[Verdicts], summaries: list[dict]) -> None:
    """Writes FILE (JSON) and FILE.csv."""
    rows = [{**dataclasses.asdict(r), "agree": r.agree, "kind": r.kind} for r in records]
    pathlib.Path(path).write_text(json.dumps({**info, "summary": summaries, "rows": rows}, indent=1))
    with open(pathlib.Path(path).with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["model"])
        writer.writeheader()
        writer.writerows(rows)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT / ".corpus"), help="folder of <model>.jsonl(.gz)")
    parser.add_argument("--geak", required=True, help="GEAK-eval checkout or a folder holding TritonBench_G_v1")
    parser.add_argument("--models", default="", help="comma-separated model sets (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="first N rows of each model")
    parser.add_argument("--workers", type=int, default=8, help="the Evaluator's candidate workers")
    parser.add_argument("--geak-workers", type=int, default=8, help="GEAK-eval checks at once")
    parser.add_argument("--device", default="auto", help="auto | cuda | rocm | interpreter")
    parser.add_argument("--sandbox", default="bwrap", help="bwrap | off")
    parser.add_argument("--timeout", type=float, default=None,
                        help="one limit for every stage, seconds (default: the project's Limits)")
    parser.add_argument("--geak-timeout", type=float, default=geak_correctness.STEP_TIMEOUT_S,
                        help="limit of each GEAK-eval step, seconds (GEAK-eval: 120)")
    parser.add_argument("--max-wall-s", type=float, default=1800.0,
                        help="seconds from the start: then give up on whatever has no verdict "
                             "and write what there is")
    parser.add_argument("--out", default="llm_corpus.json", help="JSON results (and .csv beside)")
    parser.add_argument("--dump", default=None, help="write each disagreeing reply's code here")
    parser.add_argument("--resume", default="",
                        help="comma-separated earlier --out JSONs (.json or .json.gz): their "
                             "replies with both verdicts are kept, not scored again, and the "
                             "tables cover the union (one measurement over several device calls)")
    parser.add_argument("--verdicts", help="with --gate-only: an earlier run's --out JSON; "
                        "also count the replies its GEAK check passed that the gate refuses now")
    parser.add_argument("--gate-only", action="store_true",
                        help="no device: the static gate's verdict on every reply, by model and rule")
    return parser.parse_args()


def gate_only(rows: list[dict], tasks: dict, verdicts_path: str | None = None) -> None:
    """Prints the static gate's verdicts alone (milliseconds a reply, no device): how many
    replies of each model it refuses, by rule, and each refusal; with `verdicts_path` (an
    earlier run's JSON), how many replies its GEAK check passed the gate refuses now."""
    from fitness.static_gate_cli import judge

    geak = {}
    if verdicts_path:
        with _open_text(pathlib.Path(verdicts_path)) as handle:  # .json.gz, as data/ keeps it
            geak = {(r["model"], r["row"]): r for r in json.load(handle)["rows"]}
    passed = {"geak_call": [0, 0], "geak_exec": [0, 0]}  # [GEAK passed, the gate refuses]
    refused: dict[str, list[str]] = {}
    counts: dict[str, list[int]] = {}
    for row in rows:
        task = tasks.get(common.task_name(row["task"] or ""))
        if task is None or row["source"] is None:
            continue
        verdict = judge(f"{row['model']}/{task.name}", row["source"], task)
        earlier = geak.get((row["model"], row["row"]), {})
        for what, tally in passed.items():
            if earlier.get(what):
                tally[0] += 1
                tally[1] += not verdict.allowed
        counts.setdefault(row["model"], [0, 0])[0] += 1
        if not verdict.allowed and verdict.rule != "syntax":
            counts[row["model"]][1] += 1
            refused.setdefault(verdict.rule, []).append(f"{verdict.candidate}: {verdict.violation}"[:240])
    for model, (n, no) in sorted(counts.items()):
        print(f"{model:22} {n:4d} gated, {no:3d} refused (syntax errors not counted)")
    if geak:
        for what, (ok, no) in passed.items():
            print(f"{what} in {verdicts_path}: {ok} replies; the gate refuses {no} of them now")
    for rule, lines in sorted(refused.items(), key=lambda item: -len(item[1])):
        print(f"rule {rule}: {len(lines)}")
        print("\n".join(f"  {line}" for line in lines))


def main() -> None:
    started = time.monotonic()  # --max-wall-s counts from here
    args = _parse_args()
    from fitness import Evaluator, Limits, Settings

    rows = load_corpus(args.corpus, [m for m in args.models.split(",") if m] or None, args.limit)
    folder = common.find_folder(args.geak, tritonbench.SUITE, tritonbench.SUBPATHS)
    tasks = {task.name: task for task in tritonbench.load(str(folder))}
    if args.gate_only:
        return gate_only(rows, tasks, args.verdicts)
    limits = Limits.uniform(args.timeout) if args.timeout else Limits()
    settings = Settings(device=args.device, workers=args.workers, sandbox=args.sandbox,
                        static_gate=True, timeouts=limits)
    bound_s = walk_bound_s(limits)
    records = [Verdicts(row["model"], row["task"] and common.task_name(row["task"]), row["row"])
               for row in rows]
    records = [dataclasses.replace(r, task=None) if r.task not in tasks else r for r in records]
    kept = resumed(records, [path for path in args.resume.split(",") if path])
    work = sorted((pair for pair in zip(rows, records) if pair[1].task and not pair[1].done),
                  key=lambda pair: (pair[1].task, pair[1].model))
    evaluator = Evaluator(settings)
    checker = geak_correctness.Checker(timeout_s=args.geak_timeout)
    pools = {"project": concurrent.futures.ThreadPoolExecutor(args.workers),
             "geak": concurrent.futures.ThreadPoolExecutor(args.geak_workers)}
    jobs = {"project": lambda row, record: score_project(evaluator, tasks[record.task], row, record,
                                                         limits),
            "geak": lambda row, record: score_geak(checker, tasks[record.task].source_path, row, record)}
    pending = score_all(work, pools, jobs, started + args.max_wall_s, started, bound_s)
    info = {"device": evaluator.device.name, "backend": evaluator.device.backend,
            "date": time.strftime("%Y-%m-%d %H:%M"), "wall_s": round(time.monotonic() - started, 1),
            "settings": {"workers": args.workers, "geak_workers": args.geak_workers,
                         "limits": dataclasses.asdict(limits), "walk_bound_s": bound_s,
                         "geak_timeout_s": args.geak_timeout, "sandbox": args.sandbox,
                         "corpus": args.corpus, "models": args.models or "all", "limit": args.limit,
                         "resume": args.resume},
            "pending_at_deadline": pending, "kept_from_earlier_runs": kept}
    summaries = summarize(records)
    print(f"device: {info['device']} ({info['backend']}), {info['date']}, wall {info['wall_s']} s, "
          f"an evaluation's bound {bound_s:g} s, GEAK step limit {args.geak_timeout:g} s; "
          f"{kept} replies' verdicts kept from {args.resume or 'no earlier run'}")
    print(table(summaries))
    print("\n".join(goals(summaries[-1])))
    over = over_limit_lines(records)
    print(f"past a limit + grace: {len(over)}" + ("" if not over else "\n" + "\n".join(over)))
    lines = disagreement_lines(records)
    print(f"disagreements: {len(lines)}" + ("" if not lines else "\n" + "\n".join(lines)))
    if pending:
        print(f"{pending} verdicts still pending at --max-wall-s {args.max_wall_s:g}: left out")
    write_outputs(args.out, info, records, summaries)
    if args.dump:
        _dump(args.dump, rows, records)
    for pool in pools.values():
        pool.shutdown(wait=False, cancel_futures=True)
    checker.close()
    evaluator.close()
    if pending:
        os._exit(0)  # a thread that never returned would hold the interpreter's exit


def resumed(records: list[Verdicts], paths: list[str]) -> int:
    """Fills in, from the earlier runs' JSONs at `paths`, every record they judged both ways
    (same model, row and task), which is then not scored again; returns how many. A reply an
    earlier run left pending is scored now."""
    earlier = {}
    for path in paths:
        with _open_text(pathlib.Path(path)) as handle:
            for row in json.load(handle)["rows"]:
                if row.get("done"):
                    earlier[(row["model"], row["row"], row["task"])] = row
    fields = {field.name for field in dataclasses.fields(Verdicts)}
    kept = 0
    for at, record in enumerate(records):
        row = earlier.get((record.model, record.row, record.task))
        if row is not None and record.task:
            records[at] = Verdicts(**{key: value for key, value in row.items() if key in fields})
            kept += 1
    return kept


def score_all(work: list, pools: dict, jobs: dict, deadline: float, started: float,
              bound_s: float) -> int:
    """Runs each job (project, GEAK) on every (row, record) in its pool, until done or the
    deadline (monotonic); marks the records with both verdicts done; returns how many jobs
    were still pending. A project job running past `bound_s` is named at once (`watch`)."""
    lock, finished, running = threading.Lock(), [0], {}

    def run(name, row, record):
        if name == "project":
            with lock:
                running[id(record)] = (record, time.monotonic())
        try:
            jobs[name](row, record)
        finally:
            with lock:
                if name == "project":
                    running.pop(id(record), None)
                finished[0] += 1
                if finished[0] % 50 == 0:
                    print(f"[{finished[0]}/{2 * len(work)} verdicts, {time.monotonic() - started:.0f} s]", flush=True)

    futures = {pools[name].submit(run, name, row, record): record for name in pools for row, record in work}
    pending = set(futures)
    while pending and time.monotonic() < deadline:
        _, pending = concurrent.futures.wait(pending, timeout=min(5.0, max(0.0, deadline - time.monotonic())))
        with lock:
            watched = list(running.values())
        watch(watched, bound_s)
    done = set(futures) - pending
    halves: dict[int, int] = {}
    for future in done:
        record = futures[future]
        if future.exception() is not None:
            record.project_detail = f"script error: {future.exception()!r}"[:300]
        else:
            halves[id(record)] = halves.get(id(record), 0) + 1
    for record in {id(record): record for record in futures.values()}.values():
        record.done = halves.get(id(record), 0) == 2
    return len(pending)


def watch(running: list[tuple[Verdicts, float]], bound_s: float) -> None:
    """Names each evaluation still running past `bound_s` (once): it has no verdict yet and
    keeps its pool thread, which the Evaluator's limits should never allow."""
    now = time.monotonic()
    for record, since in running:
        if now - since > bound_s and not record.over_limit:
            record.over_limit = f"no verdict {now - since:.0f} s in (bound {bound_s:g} s)"
            print(f"past its bound: {record.model}/{record.task} (row {record.row}): "
                  f"{record.over_limit}", flush=True)


def _dump(folder: str, rows: list[dict], records: list[Verdicts]) -> None:
    """Writes each disagreeing reply's code as <model>__<task>.py (for explaining it)."""
    out = pathlib.Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for row, record in zip(rows, records):
        if record.task and record.done and not record.agree:
            (out / f"{record.model}__{record.task}.py").write_text(row["source"] or "")


if __name__ == "__main__":
    main()
