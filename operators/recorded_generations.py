"""Generations from a file: the generator role answers with recorded model output.

A campaign can start from real LLM output, such as the TritonBench-G generations published by
thunlp/TritonBench (`LLM_generated/`: JSONL rows {instruction, predict, label}, one reply per
task per model, optionally gzip-compressed), and let the offline or replayed roles evolve it
(`operators.generations_from`). Each row is matched to a task by its gold code
(`operators.label_matching`); a campaign task no row matches is an error at load, not a
guess. The reply then takes the generator's one path (`operators.offspring.ask`): the same code
extraction as a live reply, and a row in `llm_calls/` with the model, the response, `recorded_from`
(file:line), latency and cost 0, tokens null (none were spent by this campaign).

Several rows for one task are several samples: an island's generator calls take them in
file order, island i starting at sample i, and start over once all were served (a restart
from a debugging trap restarts from recorded output). Like replay's, this place in the file is
the client's own and not checkpointed: a resumed campaign starts over at each island's sample.
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import json
import pathlib
from typing import Mapping, Sequence

from evo.records import LLMUsage, Task
from operators import label_matching
from operators.llm_client import LLMReply, call_row, request_hash
from operators.replay import Position

_GZIP_MAGIC = b"\x1f\x8b"
_SUFFIXES = (".gz", ".jsonl", ".json")


@dataclasses.dataclass(frozen=True)
class Sample:
    """One recorded reply (`predict`) and the line of the file it is on (from 1)."""

    text: str
    line: int


@dataclasses.dataclass(frozen=True)
class Generations:
    """A file's replies for a campaign's tasks.

    Attributes:
      path: the file, as the config names it (rows say `<path>:<line>`).
      model: the name the replies' llm_calls rows and candidates carry.
      samples: task name -> its replies in file order (every campaign task has one at least).
      report: one line: the rows, how they matched, and how many serve this campaign.
    """

    path: str
    model: str
    samples: Mapping[str, tuple[Sample, ...]]
    report: str


def default_model(path: str) -> str:
    """Returns the model name a file's name gives ("gpt-4o.jsonl.gz" -> "gpt-4o")."""
    name = pathlib.Path(path).name
    while pathlib.Path(name).suffix in _SUFFIXES:
        name = name[:-len(pathlib.Path(name).suffix)]
    return name


def read_rows(path: str) -> list[tuple[int, dict]]:
    """Returns (line number, row) for each non-blank line of the JSONL file (gzip or plain);
    raises FileNotFoundError or ValueError naming the file and, for a malformed row, its line."""
    file = pathlib.Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no generations file at {path}")
    data = file.read_bytes()
    try:
        text = (gzip.decompress(data) if data[:2] == _GZIP_MAGIC else data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not UTF-8 JSONL, plain or gzip ({error})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            rows.append((number, _row(path, number, line)))
    if not rows:
        raise ValueError(f"{path} holds no rows (expected JSONL rows {{instruction, predict, label}})")
    return rows


def _row(path: str, number: int, line: str) -> dict:
    """Returns the row on one line, or raises ValueError naming the line and what is wrong."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{number}: not a JSON object ({error})") from None
    if not isinstance(row, dict):
        raise ValueError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
    wrong = [key for key in ("predict", "label") if not isinstance(row.get(key), str)]
    if wrong:
        raise ValueError(f"{path}:{number}: needs string fields predict (the reply) and label "
                         f"(the gold code); {', '.join(wrong)} missing or not a string "
                         f"(keys: {', '.join(sorted(row)) or 'none'})")
    return row


def references(tasks: Sequence[Task]) -> list[label_matching.Reference]:
    """Returns what a row's label is matched against for each task: its gold file (an
    external task's source file, kernel and test code) and its baseline kernel."""
    found = []
    for task in tasks:
        source = pathlib.Path(task.source_path) if task.source_path else None
        gold = (source.read_text(encoding="utf-8"),) if source and source.is_file() else ()
        found.append(label_matching.Reference(task.name, (task.baseline_source, *gold), task.instruction))
    return found


def load(path: str, model: str, suite: Sequence[Task], campaign: Sequence[str]) -> Generations:
    """Returns the replies of the file at `path` for the `campaign` task names, its rows
    matched against every task of the `suite` (a row of a task outside the campaign must not
    land on one inside it). Raises FileNotFoundError or ValueError naming the problem: the
    file, a malformed line, or the campaign tasks no row matches."""
    samples, report = matched(path, suite, campaign)
    missing = [name for name in campaign if name not in samples]
    if missing:
        raise ValueError(f"no row matches campaign task(s) {', '.join(missing)}: {report}. "
                         f"Give campaign.tasks only tasks the file covers")
    return Generations(path, model or default_model(path), samples, report)


def matched(path: str, suite: Sequence[Task], campaign: Sequence[str]) -> tuple[dict, str]:
    """Returns ({campaign task name: its Samples in file order}, a line saying how the file's
    rows matched) for the tasks of `campaign` some row matches (`load`'s reading)."""
    rows = read_rows(path)
    matches = label_matching.match_rows([row for _, row in rows], references(suite))
    samples: dict[str, list[Sample]] = collections.defaultdict(list)
    for (number, row), match in zip(rows, matches):
        if match.name in campaign:
            samples[match.name].append(Sample(row["predict"], number))
    how = ", ".join(f"{n} {way}" for way, n in label_matching.counts(matches).items() if n)
    unsure = [str(number) for (number, _), match in zip(rows, matches) if match.name is None]
    report = (f"{path}: {len(rows)} rows ({how}"
              + (f"; line(s) {', '.join(unsure[:10])}{' ...' if len(unsure) > 10 else ''} left out"
                 if unsure else "")
              + f"); {sum(map(len, samples.values()))} replies serve {len(samples)} of the campaign's "
              f"{len(campaign)} tasks")
    return {name: tuple(found) for name, found in samples.items()}, report


class FileGenerator:
    """The campaign's LLM client when replies come from a file: the generator role answers
    from `generations`, every other role from `others` (an `LLMClient`, llm or replay mode;
    None offline, where the offline operators play the other roles and never ask)."""

    def __init__(self, generations: Generations, others=None):
        self.generations, self.others = generations, others
        self._served: dict[tuple[str, int], int] = {}  # (task, island) -> generator calls answered
        self._calls: list[dict] = []

    async def complete(self, role: str, messages: Sequence[Mapping[str, str]], sample_index: int = 0,
                       temperature: float | None = None, position: Position | None = None) -> LLMReply:
        """Returns the task's next recorded reply for a generator call (`position` says the
        task and island), else what `others` answers; the same call as `LLMClient.complete`."""
        if role != "generator":
            if self.others is None:
                raise ValueError(f"operators.generations_from answers only the generator role, "
                                 f"and this campaign has no LLM client for the {role} role")
            return await self.others.complete(role, messages, sample_index, temperature, position)
        if position is None:
            raise ValueError("a recorded generation is picked by task and island: the generator "
                             "call needs its position")
        sample = self._next(position)
        key = request_hash(self.generations.model, messages, {}, sample_index)
        usage = LLMUsage(model=self.generations.model, request_hash=key)
        where = f"{self.generations.path}:{sample.line}"
        reply = (LLMReply(sample.text, usage, True, "", key, recorded_from=where) if sample.text.strip()
                 else LLMReply("", usage, False, f"empty recorded reply at {where}", key,
                               failure_kind="empty_response", recorded_from=where))
        row = call_row(role, sample_index, messages, reply)
        row.update(prompt_tokens=None, completion_tokens=None)  # this campaign spent none
        self._calls.append(row)
        return reply

    def _next(self, position: Position) -> Sample:
        samples = self.generations.samples.get(position.task)
        if not samples:
            raise ValueError(f"no recorded generation for task {position.task!r} in "
                             f"{self.generations.path} (its tasks: {', '.join(self.generations.samples)})")
        place = (position.task, position.island)
        served = self._served.get(place, 0)
        self._served[place] = served + 1
        return samples[(position.island + served) % len(samples)]

    def drain_calls(self) -> list[dict]:
        """Returns the call-log rows since the last drain, the file's and `others`', and forgets them."""
        calls, self._calls = self._calls, []
        return calls + (self.others.drain_calls() if self.others is not None else [])

    async def aclose(self) -> None:
        if self.others is not None:
            await self.others.aclose()
