"""Taking the kernel module out of an LLM response and checking it before anything runs it.

A response must carry a fenced code block (```python ... ```) holding a whole module that
parses and defines the task's entry point; a response with no fence at all is taken whole
when it is such a module (GEAK-eval's rule: TritonBench's recorded replies are bare code).
The text around the block is the model's analysis or strategy, kept on the Candidate. Failure reasons start with a fixed word
(`no_code_block`, `syntax_error`, `missing_entry_point`) so they can be counted.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from evo.records import parse_source

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = ("python", "py", "python3", "")
MAX_NOTES_CHARS = 4000


@dataclasses.dataclass(frozen=True)
class Parsed:
    """The code and the prose of a response; `failure` is "" when the code is usable."""

    source: str
    notes: str
    failure: str = ""


def defines(source_tree: ast.Module, name: str) -> bool:
    """Returns True if the module defines `name` at top level (def, async def or assignment)."""
    for node in source_tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def check_module(source: str, entry_point: str) -> str:
    """Returns "" if `source` parses and defines `entry_point`, else the failure reason."""
    try:
        tree = parse_source(source)
    except SyntaxError as error:
        return f"syntax_error: line {error.lineno}: {error.msg}"
    except (ValueError, RecursionError) as error:
        return f"syntax_error: {error}"
    if not defines(tree, entry_point):
        return f"missing_entry_point: the code defines no top-level `{entry_point}`"
    return ""


def extract(text: str, entry_point: str) -> Parsed:
    """Returns the module in `text` (the last fenced Python block that defines the entry point).

    With several blocks the last usable one wins: models often show a fragment, then the
    whole module. An opening fence never closed means the answer was cut off (max_tokens).
    """
    blocks = [(m.group(1).lower(), m.group(2), m.span()) for m in _FENCE.finditer(text)]
    blocks = [b for b in blocks if b[0] in _PYTHON_TAGS]
    if not blocks:
        if "```" in text:
            return Parsed("", _notes(text), "no_code_block: an opening ``` is never closed "
                                            "(answer cut off at max_tokens?)")
        return _bare(text, entry_point)
    for _, code, span in reversed(blocks):
        if not check_module(code, entry_point):
            return Parsed(code.rstrip() + "\n", _notes(text[:span[0]] + text[span[1]:]))
    # Report the last block's problem: it is the one the model meant as its answer.
    _, code, span = blocks[-1]
    return Parsed(code, _notes(text[:span[0]] + text[span[1]:]), check_module(code, entry_point))


def _bare(text: str, entry_point: str) -> Parsed:
    """Returns a response with no fence at all: the module when it is one; else why not, the
    module's own failure when the text reads as code (GEAK-eval runs it as it is, and it
    fails there too: RESULTS.md#bare-replies), no_code_block when it is prose."""
    failure = check_module(text, entry_point)
    if not failure:
        return Parsed(text.rstrip() + "\n", "")
    if _reads_as_code(text):
        return Parsed(text, "", failure)
    return Parsed("", _notes(text), "no_code_block: no ``` fence")


def _reads_as_code(text: str) -> bool:
    """Whether a text is meant as a module (whether or not it is one): it opens as one does."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.startswith(("import ", "from ", "@triton", "def ", "class "))  # not "#": markdown


def _notes(prose: str) -> str:
    prose = re.sub(r"\n{3,}", "\n\n", prose).strip()
    return prose if len(prose) <= MAX_NOTES_CHARS else prose[:MAX_NOTES_CHARS] + " [...]"
