"""House rules of the product code (evo/, operators/, fitness/, benchmarks/; STYLE.md 18): code
keeps the reasoning, RESULTS.md keeps the evidence, and the code says what, not which ticket;
and no file of the repository names one machine's own folders."""

import ast
import io
import pathlib
import re
import subprocess
import tokenize

ROOT = pathlib.Path(__file__).resolve().parent.parent
PRODUCT = ("evo", "operators", "fitness", "benchmarks")
NOT_PRODUCT = ("benchmarks/builtin/kernels/", "operators/exemplars/")  # kernels, not our code
RESULTS = ROOT / "experiments" / "perf" / "RESULTS.md"
MAX_DOCSTRING_LINES = 15
DEVICE_MODELS = re.compile(r"\bH[12]00\b")
TICKET = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
EVIDENCE = re.compile(r"RESULTS\.md#([a-z0-9-]+)")
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|Users)/[\w.-]+")


def product_files() -> list[pathlib.Path]:
    files = []
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith(NOT_PRODUCT):
                continue
            files.append(path)
    return files


def prose(path: pathlib.Path):
    """Yields (line, text) of every comment and string literal in a file: where a citation
    would be written. A literal that is exactly a device model's name ("H200") is a lookup
    key (the device table), not prose, and is left out."""
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
        elif token.type in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)):
            if not re.fullmatch(r"[rbuRBU]?(['\"])H[12]00\1", token.string):
                yield token.start[0], token.string


def offenders(pattern: re.Pattern) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {text.strip()[:100]}"
            for path in product_files() for line, text in prose(path) if pattern.search(text)]


def test_no_docstring_is_over_15_lines():
    """A docstring says what and why; history and measurements go to RESULTS.md."""
    long = []
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node)
                lines = len(text.splitlines()) if text else 0
                if lines > MAX_DOCSTRING_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.body[0].lineno} "
                                f"{getattr(node, 'name', '<module>')}: {lines} lines")
    assert not long, "docstrings over 15 lines:\n" + "\n".join(long)


def test_product_code_cites_no_gpu_run():
    """Which GPU a number was measured on is evidence: RESULTS.md holds it, the code names the
    anchor (`evidence: RESULTS.md#...`)."""
    found = offenders(DEVICE_MODELS)
    assert not found, "H200/H100 in product code (move it to RESULTS.md):\n" + "\n".join(found)


def test_product_code_names_no_ticket():
    """The code says what it does and why, not which issue asked for it."""
    found = offenders(TICKET)
    assert not found, "issue numbers in product code:\n" + "\n".join(found)


def test_every_evidence_the_code_cites_is_in_results():
    anchors = set(re.findall(r"^### ([a-z0-9-]+)\s*$", RESULTS.read_text(), re.MULTILINE))
    missing = sorted({f"{path.relative_to(ROOT)}: {anchor}"
                      for path in product_files()
                      for anchor in EVIDENCE.findall(path.read_text()) if anchor not in anchors})
    assert not missing, "RESULTS.md has no such anchor:\n" + "\n".join(missing)


def test_no_file_names_a_machine_s_own_folder():
    """A clone runs anywhere: no file in the repository names an absolute folder of one machine
    (under /work or /home); the external suites come through KERNELEVO_EXTERNAL (README.md,
    "Tests"), examples use it or a placeholder."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True).stdout  # nothing: not a clone
    names = [name for name in listed.decode().split("\0") if name] or [
        path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*")
        if path.is_file() and not {".git", ".venv", "results"} & set(path.relative_to(ROOT).parts)]
    found = [f"{name}:{number}: {line.strip()[:100]}" for name in names if (ROOT / name).is_file()
             for number, line in enumerate((ROOT / name).read_bytes().decode(errors="replace")
                                           .splitlines(), 1) if MACHINE_PATH.search(line)]
    assert not found, "a machine's own folder named:\n" + "\n".join(found)


def test_product_code_parses_python_only_through_parse_source():
    """CPython 3.11 can fail two `ast.parse` calls made at once in one process ("AST
    constructor recursion depth mismatch"); `evo.records.parse_source` serialises them, which
    holds only if no product module calls `ast.parse` itself (CI failed on a registry built
    while the evaluator parsed a candidate)."""
    direct = []
    for path in product_files():
        if path == ROOT / "evo" / "records.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr == "parse"
                    and isinstance(node.value, ast.Name) and node.value.id == "ast"):
                direct.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not direct, "ast.parse outside evo.records.parse_source:\n" + "\n".join(direct)
