"""The commands an example config's comments suggest work as written: every `evo run` command
loads with its `--set` overrides (a price set where `budget.max_usd` needs one), and a GEAK-eval
suite is pointed at a GEAK-eval checkout, not at TritonBench's."""

import pathlib
import re
import shlex

import pytest

from evo import config as config_lib

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "experiments").glob("*.toml"))
GEAK_EVAL_SUITES = ("tritonbench-revised", "rocm")


def commented_commands(path: pathlib.Path) -> list[str]:
    """Returns the commands in `path`'s comments, continuation lines (`\\`) joined."""
    commands, current = [], ""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        if current or text.startswith(("evo ", "--set")):
            current += " " + text.rstrip("\\").strip()
            if not text.endswith("\\"):
                commands.append(current.strip())
                current = ""
    return commands


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_every_evo_run_in_an_example_configs_comments_loads(path):
    for command in commented_commands(path):
        words = shlex.split(command)
        if words[:2] != ["evo", "run"]:
            continue
        overrides = [words[i + 1] for i, word in enumerate(words) if word == "--set"]
        config_lib.load(ROOT / words[2], overrides)  # raises ConfigError, naming the problem


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_a_geak_eval_suite_in_an_example_configs_comments_names_a_geak_eval_checkout(path):
    for command in commented_commands(path):
        suite = re.search(r"campaign\.suite=([\w-]+)", command)
        if suite and suite.group(1) in GEAK_EVAL_SUITES:
            checkout = re.search(r"campaign\.path=(\S+)", command)
            assert checkout and checkout.group(1).endswith("/GEAK-eval"), (path.name, command)
