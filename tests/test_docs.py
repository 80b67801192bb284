"""The documentation a user reads stands on its own: every relative link of README.md and
docs/*.md reaches a file of the repository (nothing under ../shared), every example config is
listed in the README with the question it opens with and loads as `evo run` / `evo sweep`
would load it, and docs/metrics.md defines every column of the report's suite table."""

import pathlib
import re
import tomllib

import pytest

from evo import config, sweep
from evo.analysis import report

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
EXAMPLES = sorted((ROOT / "experiments").rglob("*.toml"))
EXAMPLES_SECTION = "## Configs, examples and metrics"


def relative_links(path: pathlib.Path) -> list[str]:
    """Returns the targets of a markdown file's links that are not URLs or in-page anchors."""
    return [target for target in LINK.findall(path.read_text())
            if not re.match(r"[a-z]+:|#", target)]


def test_every_relative_link_of_the_readme_and_docs_reaches_a_file_of_the_repository():
    broken = []
    for doc in DOCS:
        for target in relative_links(doc):
            resolved = (doc.parent / target.split("#")[0]).resolve()
            if not resolved.exists() or not resolved.is_relative_to(ROOT):
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, "links that reach nothing in the repository:\n" + "\n".join(broken)


def test_no_doc_names_a_file_beside_the_repository_but_the_external_suites_default():
    """../shared/external is KERNELEVO_EXTERNAL's documented default (README, "Tests");
    nothing else a reader is sent to may live outside the checkout."""
    found = [f"{doc.relative_to(ROOT)}:{number}: {line.strip()}" for doc in DOCS
             for number, line in enumerate(doc.read_text().splitlines(), 1)
             if re.search(r"\.\./shared(?!/external\b)", line)]
    assert not found, "\n".join(found)


def test_the_readme_links_the_config_reference_metrics_and_design():
    links = relative_links(README)
    for doc in ("docs/config.md", "docs/metrics.md", "docs/design.md"):
        assert doc in links, doc


def test_the_link_check_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[design](../shared/DESIGN.md), [web](https://x.org), [here](#top)")
    assert relative_links(page) == ["../shared/DESIGN.md"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_an_example_config_opens_with_its_question_and_is_listed_in_the_readme(path):
    name = path.relative_to(ROOT).as_posix()
    assert path.read_text().startswith("# Question: "), f"{name}: first line is not its question"
    examples = README.read_text().split(EXAMPLES_SECTION, 1)[1].split("\n## ", 1)[0]
    assert f"| `{name}`" in examples, f"{name} is not in the README's table of example configs"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_an_example_config_loads(path):
    if "sweep" in tomllib.loads(path.read_text()):  # every cell, its base with a grid point
        assert sweep.expand(sweep.load_sweep(path))
    else:
        assert config.load(path).campaign.name


def test_metrics_defines_every_column_of_the_suite_table():
    metrics = (ROOT / "docs" / "metrics.md").read_text()
    missing = [column for column in report.SUITE_COLUMNS if column not in metrics]
    assert not missing, f"docs/metrics.md does not define {missing}"
