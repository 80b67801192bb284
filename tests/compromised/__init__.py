"""The compromised-worker suite: candidates that run arbitrary code inside their worker.

Each cheat file is "the honest kernel plus an attack" on one part of the judge (its clock,
its report, its inputs, its outputs, its next candidate, its baseline), written to keep
attacking whatever the harness's internal names become. Header lines:

    # task: vector_add
    # class: 2 slows or swaps the worker's clock
    # twin: honest_vector_add.py
    # expect: no-faster

`twin` is the honest file with the same kernel (its real speed); `expect` is the verdict the
judge must give: `no-faster` (not correct, or no faster than the twin beyond timing noise),
`wrong` (never correct: it returns outputs before they hold the result), `next-correct` (the
next candidate in the same process is judged as if alone), `baseline-not-inflated` (a baseline
timed beside it is not slowed). A twin's `torch-allowlist:` names the torch ops its task
copy allows (the twin of a cheat that does the work in torch behind a blinded recorder).
"""

import math
import pathlib
import statistics
import types

DIR = pathlib.Path(__file__).parent


def header(path: pathlib.Path) -> dict[str, str]:
    """Returns the `# key: value` lines at the top of a candidate file."""
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, value = line[2:].split(":", 1)
        fields[key.strip()] = value.strip()
    return fields


def cheats() -> list[pathlib.Path]:
    """Returns every cheat file (those with a `class:` header), in class order."""
    found = [path for path in DIR.glob("*.py") if "class" in header(path)]
    return sorted(found, key=lambda path: (int(header(path)["class"].split()[0]), path.name))


def class_number(path: pathlib.Path) -> int:
    return int(header(path)["class"].split()[0])


def twin(path: pathlib.Path) -> pathlib.Path:
    """Returns the honest twin of a cheat file."""
    return DIR / header(path)["twin"]


def scored_after(evaluator, task, cheat: pathlib.Path, round_: int = 0) -> tuple:
    """Returns (twin alone, cheat, twin right after it) scored one after another on
    `evaluator` (give it one worker: the next candidate runs where the cheat ran); `round_`
    makes each a new candidate (a comment) for a round after the first."""
    from evo.records import make_candidate

    def score(path, copy):
        copy = f"{copy} {round_}".strip() if round_ else copy
        source = path.read_text() + (f"\n# copy: {copy}\n" if copy else "")
        return evaluator.evaluate(task, make_candidate(task.name, source))

    return score(twin(cheat), "alone"), score(cheat, ""), score(twin(cheat), "after")


def next_slower_than_alone(evaluator, task, cheat: pathlib.Path, bound: float,
                           more: int = 2) -> tuple:
    """Returns (rounds of `scored_after`, how many times slower the twin read right after the
    cheat than alone: `slower_by` of each side's fastest reading per case). A round is added,
    up to `more`, while that reads over `bound`: a CPU-time reading scatters upward (one
    round on CI's two cores read the twin alone 1.7x faster than after, on a quiet worker),
    while a twin the cheat's traps slow is slow after the cheat in every round."""
    rounds = [scored_after(evaluator, task, cheat)]
    while True:
        alone = _per_case([r[0] for r in rounds], min)
        after = _per_case([r[2] for r in rounds], min)
        slower = slower_by(after, alone)
        if slower is not None and slower <= bound or len(rounds) > more:
            return rounds, slower
        rounds.append(scored_after(evaluator, task, cheat, len(rounds)))


def scored_beside(evaluator, task, cheat: pathlib.Path, wait_s: float = 60.0) -> tuple:
    """Returns (twin quiet, twin beside the cheat, cheat, whether the cheat's import was seen).

    Each twin is the first candidate of its own copy of `task` (a new name: its baseline is
    timed anew at the start of its walk): one on a quiet machine, one started while the
    cheat is in its import (`Evaluator.in_progress`), burning. The judge's side writes the
    stage, so the cheat cannot fake it."""
    import concurrent.futures
    import dataclasses
    import time

    from evo.records import make_candidate

    def score(path, name):
        copy = dataclasses.replace(task, name=f"{task.name}_{name}")
        return evaluator.evaluate(copy, make_candidate(copy.name, path.read_text()))

    quiet = score(twin(cheat), "quiet")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        cheat_id = make_candidate(f"{task.name}_burner", cheat.read_text()).id
        burning = pool.submit(score, cheat, "burner")
        deadline, seen = time.monotonic() + wait_s, False
        while not seen and time.monotonic() < deadline and not burning.done():
            seen = any(snap["candidate_id"] == cheat_id and snap["stage"] == "import"
                       for snap in evaluator.in_progress())
            time.sleep(0.05)
        time.sleep(1.0)  # its burners are up
        beside = score(twin(cheat), "beside")
        return quiet, beside, burning.result(), seen


def slower_by(cheat, twin) -> float | None:
    """Returns how many times slower the cheat's timed cases are than its twin's (the
    geometric mean over cases both timed), or None when they share no timed case. A
    clear loser (speedup None: its other cases untimed) is compared this way too."""
    pairs = [(c, t) for c, t in zip(cheat.latency_us, twin.latency_us) if c and t]
    if not pairs:
        return None
    return math.exp(sum(math.log(c / t) for c, t in pairs) / len(pairs))


def slower_than_twin(cheat, twin, rescore, bound: float, more: int = 2,
                     cheat_again=None) -> float | None:
    """`slower_by` against the twin's fastest reading per case, the twin scored again (by
    `rescore()`, up to `more` times) while the cheat reads over `bound` times faster; then,
    while it still does, the cheat scored again too (`cheat_again()`, as many times) and read
    at its median per case. A CPU-time reading scatters upward mostly (a neighbour's load
    slows a tree), so the twin's fastest is its honest time; but one reading of a cheat whose
    runs are its twin's read 1.5x under the twin's fastest of three on CI's two cores
    (RESULTS.md §32). A cheat faster by its trick is faster in every scoring, and its median
    shows it."""
    twins, cheats = [twin], [cheat]
    while True:
        fastest = _per_case(twins, min)
        slower = slower_by(_per_case(cheats, statistics.median_low), fastest)
        if slower is None or slower >= 1 / bound:
            return slower
        if len(twins) <= more:
            twins.append(rescore())
        elif cheat_again is not None and len(cheats) <= more:
            cheats.append(cheat_again())
        else:
            return slower


def _per_case(evaluations: list, pick) -> types.SimpleNamespace:
    """Returns one reading per case: `pick` of the evaluations' timed readings of it."""
    return types.SimpleNamespace(latency_us=[
        pick(readings) if (readings := [e.latency_us[case] for e in evaluations if e.latency_us[case]])
        else None for case in range(len(evaluations[0].latency_us))])


def task_of(path: pathlib.Path):
    """The file's built-in task; a twin's `torch-allowlist` gives a copy allowing those ops."""
    import dataclasses

    from benchmarks.registry import builtin

    fields = header(path)
    task = builtin().get(fields["task"])
    allowed = tuple(fields.get("torch-allowlist", "").split())
    return dataclasses.replace(task, torch_allowlist=task.torch_allowlist + allowed) if allowed else task


def scored(evaluator, path: pathlib.Path, copy: str = ""):
    """Scores the file on its task; `copy` (a comment) makes the same source a new candidate."""
    from evo.records import make_candidate

    task = task_of(path)
    source = path.read_text() + (f"\n# copy: {copy}\n" if copy else "")
    return evaluator.evaluate(task, make_candidate(task.name, source))
