"""`make wheelhouse` packs the project's own files: from a clone, and from an exported tree
(`git archive`, a copy) lying inside another git repository, which may ignore it whole."""

import importlib.util
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("wheelhouse", ROOT / "tools" / "wheelhouse.py")
wheelhouse = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(wheelhouse)

PACKED = [".gitignore", "evo/__init__.py", "experiments/quickstart.toml", "pyproject.toml"]


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _project(root: pathlib.Path) -> pathlib.Path:
    """A small project: what PACKED names, and what its .gitignore leaves out."""
    files = {".gitignore": ".venv/\nresults/\n__pycache__/\n", "pyproject.toml": "[project]\n",
             "evo/__init__.py": "", "experiments/quickstart.toml": "[campaign]\n",
             ".venv/bin/python": "", "results/run/rows.parquet": "", "evo/__pycache__/x.pyc": ""}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_clone_packs_what_its_git_knows_or_would_add(tmp_path):
    project = _project(tmp_path / "clone")
    _git("init", "-q", cwd=project)
    _git("add", "pyproject.toml", cwd=project)  # tracked or not, both are packed
    assert wheelhouse.project_files(project) == PACKED


def test_an_exported_tree_inside_a_repository_that_ignores_it_packs_its_own_files(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    _git("init", "-q", cwd=outer)
    (outer / ".gitignore").write_text("export/\n*.toml\n")  # the enclosing repository's rules
    project = _project(outer / "export")
    assert wheelhouse.project_files(project) == PACKED
