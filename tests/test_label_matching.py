"""operators/label_matching.py: a recorded row finds its task by its gold code, exactly,
inside one task's code, or by its instruction; several fits are ambiguous and none unmatched,
never guessed. On the fixture sets, the fixture suite and GEAK-eval's real files."""

import json
import pathlib

from external_suites import suite
from operators import label_matching, recorded_generations
from operators.label_matching import Match, Reference

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
GENERATIONS = FIXTURES / "recorded_generations" / "tritonbench_g.jsonl"
FIXTURE_SUITE = FIXTURES / "external" / "tritonbench"


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _suite_tasks(path):
    from benchmarks import registry

    return registry.load("tritonbench-revised", str(path)).tasks("tritonbench-revised")


def test_published_rows_find_their_file_exactly_inside_or_by_instruction():
    entries = json.loads((FIXTURES / "llm_corpus" / "instructions.json").read_text())
    references = [Reference(e["file"], (e["output"],), e["instruction"]) for e in entries]
    found = label_matching.match_rows(_rows(FIXTURES / "llm_corpus" / "raw_set.jsonl"), references,
                                      one_row_each=True)
    assert found == [Match("double.py", "exact"), Match("negate.py", "contained"),
                     Match("square_two.py", "instruction"), Match(None, "unmatched")]


def test_a_cut_short_label_takes_the_file_not_yet_found_only_in_a_published_set():
    references = [Reference("square_one.py", ("def square(x):\n    return x ** 2\n",)),
                  Reference("square_two.py", ("def square(x):\n    return x * x\n",))]
    rows = [{"label": "def square(x):\n    return x ** 2\n"}, {"label": "def square(<|EOT|>"}]
    assert label_matching.match_rows(rows, references, one_row_each=True)[1] == Match(
        "square_two.py", "contained")
    # A generations file may hold several samples of a task: no elimination, no guess.
    assert label_matching.match_rows(rows, references)[1] == Match(None, "ambiguous")


def test_fixture_generations_match_the_fixture_suite_each_way():
    found = label_matching.match_rows(_rows(GENERATIONS),
                                      recorded_generations.references(_suite_tasks(FIXTURE_SUITE)))
    assert found == [
        Match("scale_shift", "instruction"),  # the label predates the suite's revision
        Match("row_max", "exact"),  # the label is the file's kernel code
        Match("scale_shift", "instruction"),  # a second sample, same label and prompt
        Match("row_max", "contained"),  # no licence header, an end-of-text token
        Match(None, "unmatched"),  # a cube kernel the suite does not have
        Match(None, "ambiguous"),  # bare imports: in every file, and no instruction told
    ]
    assert label_matching.counts(found) == {"exact": 1, "contained": 1, "instruction": 2,
                                            "ambiguous": 1, "unmatched": 1}


def test_every_published_label_finds_its_revised_task_in_the_real_suite():
    """TritonBench's labels are the gold code before GEAK-eval revised the files (a licence
    header, hip for cuda calls): each of the 184 still finds the task of its own file."""
    from benchmarks.external import common, tritonbench

    folder = common.find_folder(str(suite("GEAK-eval")), tritonbench.SUITE, tritonbench.SUBPATHS)
    entries = common.read_instructions(folder, tritonbench.INSTRUCTION_FILES)
    tasks = _suite_tasks(folder)
    rows = [{"instruction": entry["instruction"], "label": entry["output"]} for entry in entries.values()]
    rows += [{"label": entries["add_example.py"]["output"][:300] + "<|EOT|>"},
             {"label": "def nothing_like_it(): pass", "instruction": "following instruction. Nothing."}]
    found = label_matching.match_rows(rows, recorded_generations.references(tasks))
    expected = [common.task_name(pathlib.Path(name).stem) for name in entries]
    assert [match.name for match in found[:len(entries)]] == expected
    how = label_matching.counts(found[:len(entries)])
    assert how["contained"] > 0 and how["instruction"] > 0  # both are needed on real files
    assert found[-2:] == [Match("add_example", "contained"), Match(None, "unmatched")]
