"""GEAK-eval's TritonBench-G correctness check, written again here: the verdict GEAK-eval
gives one LLM output, to set beside the project's own verdict on the same code.

What GEAK-eval does (`TestAllCloseEvaluatorTBG.execute` with `evaluators/TB_correctness.py`,
the call-then-match path of its TritonBench evaluator; `TB_correctness.py` is unchanged at
the latest snapshot, whose evaluator now reaches its exec verdict through the perf file):
  1. the reply becomes code: every fenced block with a language word, joined (no fence at
     all: the reply as it is; fences but no such block: no code, call and exec fail); then,
     if "```python" is still in it, what follows the last one; then every `test_*` function
     and every statement that only calls one (`test_x()`, `r = test_x()`) is removed by a
     parse/unparse round trip (a parse error leaves the code as it is);
  2. the file is that code, a blank line, the 146-'#' line, a blank line, then the gold
     file's test lines joined with "\\n" (each keeps its own newline, so they double);
  3. call: `python3 file` exits 0 within 120 s;
  4. exec: one fresh process (CUDA initialised first) seeds 42 and imports the file, takes
     `result_gold`, seeds 42 again, imports the gold file, takes its `result_gold`; both
     not None and of one type, then `compare` below, whose printed value must read "True".
     A crash or a timeout of this step is exec False (a timeout reports call False too).
Here each step runs in a process forked from a server that has torch, triton and numpy
imported (a cold `python3` costs seconds per step); `sys.path` and `argv` are what
`python3 file` would give, the working folder a scratch one. Nothing here is sandboxed:
GEAK-eval runs this code as it is, and so does this check.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import itertools
import json
import multiprocessing
import os
import pathlib
import random
import re
import runpy
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

SEPARATOR = "#" * 146
ATOL, RTOL = 1e-2, 1e-1
"""What GEAK-eval's runner passes down (`run.py`: atol=1e-2, rtol=1e-1). It applies only where
`result_gold` is itself a tensor or array: inside a dict, list or tuple, `compare` recurses
without passing it on, so every element is held to ELEMENT_ATOL, ELEMENT_RTOL."""
ELEMENT_ATOL, ELEMENT_RTOL = 1e-3, 1e-3
STEP_TIMEOUT_S = 120.0
"""GEAK-eval's limit on each step (`execute(..., timeout=2*60)`)."""
SEED = 42
_FENCED = re.compile(r"```(\w+)\n(.*?)\n```", re.DOTALL)
_OUR_PATHS = {str(pathlib.Path(__file__).resolve().parents[i]) for i in (0, 2)} | {""}
_PRELOAD = ["__main__", "numpy", "torch", "triton"]


# ---- 1 and 2: the file GEAK-eval writes -------------------------------------------------

def extract_code(response: str) -> str | None:
    """Returns the code GEAK-eval takes from an LLM reply, or None (it calls that "Code is
    empty": call and exec fail)."""
    if "```" in response:
        blocks = _FENCED.findall(response)
        if not blocks:
            return None
        response = "".join(body + "\n" for _, body in blocks)
    if "```python" in response:
        response = response.split("```python")[-1].replace("<|im_end|>", "").replace("<|EOT|>", "")
    try:
        tree = _TestRemover().visit(ast.parse(response))
        return ast.unparse(ast.fix_missing_locations(tree))
    except Exception:  # GEAK keeps the code as it is when this fails, whatever the error
        return response


def _calls_a_test(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = getattr(node.func, "id", None) or getattr(node.func, "attr", None) or ""
    return isinstance(node.func, (ast.Name, ast.Attribute)) and name.startswith("test_")


class _TestRemover(ast.NodeTransformer):
    """Drops `test_*` functions at any depth, and expression statements, assignments and
    augmented assignments whose value is a call of one. A body it empties stays empty, so
    the unparsed code does not compile: GEAK-eval's file then fails its call, and so here."""

    def visit_FunctionDef(self, node):
        return None if node.name.startswith("test_") else self.generic_visit(node)

    def visit_Expr(self, node):
        return None if _calls_a_test(node.value) else self.generic_visit(node)

    def visit_Assign(self, node):
        return None if _calls_a_test(node.value) else self.generic_visit(node)

    visit_AugAssign = visit_Assign

    def visit_ClassDef(self, node):  # its body only: bases and decorators are not visited
        node.body = [kept for kept in map(self.visit, node.body) if kept is not None]
        return node


def test_lines(gold_text: str) -> list[str]:
    """Returns the lines after the first separator line of a gold file, newlines kept."""
    lines = gold_text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.strip() == SEPARATOR), None)
    if at is None or at + 1 == len(lines):
        raise ValueError("no test code after a 146-'#' separator line")
    return lines[at + 1:]


def compose(code: str, gold_text: str) -> str:
    """Returns the file GEAK-eval runs: the candidate's code, then the gold file's tests."""
    return code + "\n\n" + SEPARATOR + "\n\n" + "\n".join(test_lines(gold_text))


# ---- 4: the comparison ------------------------------------------------------------------

def compare(ref, gen, atol: float = ELEMENT_ATOL, rtol: float = ELEMENT_RTOL, notes=None,
            where: str = "result_gold"):
    """Returns what GEAK-eval's `compare(ref, gen)` returns (a bool, or whatever `==` gives
    for other values; it may raise, which GEAK-eval counts as exec False). Dispatches on
    the generated value's exact type; lists and tuples are zipped (extra items unseen),
    dicts compared by their values in order (keys unseen), elements with the defaults.
    `notes` (a list) collects where a comparison failed, to explain a verdict."""
    import numpy
    import torch

    if type(gen) in (list, tuple):
        result = True
        for index, (r, g) in enumerate(zip(ref, gen)):
            result &= compare(r, g, notes=notes, where=f"{where}[{index}]")
        return result
    if type(gen) is dict:
        return compare(list(ref.values()), list(gen.values()), atol, rtol, notes,
                       where=f"{where}.values()")
    if type(gen) is numpy.ndarray:
        close = numpy.allclose(ref, gen, atol=atol, rtol=rtol)
    elif type(gen) is torch.Tensor:
        close = torch.allclose(ref, gen, atol=atol, rtol=rtol)  # |ref-gen| <= atol + rtol*|gen|
    else:
        return ref == gen
    if not close and notes is not None:
        notes.append(f"{where}: max |ref-gen| {_max_difference(ref, gen)} "
                     f"(atol {atol:g}, rtol {rtol:g} of |gen|)")
    return close


def _max_difference(ref, gen) -> str:
    try:
        return f"{float(abs(ref - gen).max()):.3g}"
    except Exception as error:  # only for the note
        return f"n/a ({type(error).__name__})"


def exec_verdict(ref, gen, atol: float = ATOL, rtol: float = RTOL) -> tuple[bool, str]:
    """Returns (exec_ok, reason) for two `result_gold` values, as GEAK-eval decides once both
    files imported: the result is printed and read back, so only a plain True counts (a
    one-element tensor prints "tensor(True)"; a longer one cannot be tested and crashes)."""
    if gen is None:
        return False, "Generated output is None"
    if ref is None:
        return False, "Reference output is None"
    if type(gen) is not type(ref):
        return False, f"output types differ: generated {type(gen).__name__}, reference {type(ref).__name__}"
    notes: list[str] = []
    try:
        result = compare(ref, gen, atol, rtol, notes)
        if not result:
            return False, "; ".join(notes[:3]) or "Generated output does not match reference output"
    except Exception as error:
        return False, f"the comparison raised {type(error).__name__}: {str(error)[:300]}"
    if str(result).strip().lower() != "true":
        return False, f"the comparison gave {str(result)[:80]!r}, not True"
    return True, ""


# ---- 3 and 4: the steps, each in a process of its own ----------------------------------

def _seed_all(seed: int = SEED) -> None:
    import numpy
    import torch

    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    os.environ["PYTHONHASHSEED"] = str(seed)


def _import_result(path: str):
    """Seeds, executes the file as a module (not entered in sys.modules), returns its result_gold."""
    _seed_all()
    spec = importlib.util.spec_from_file_location(pathlib.Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "result_gold", None)


def _exec_step(gen_path: str, ref_path: str, atol: float, rtol: float, result_path: str) -> int:
    import torch

    torch.set_printoptions(profile="full")
    if torch.cuda.is_available():
        torch.cuda.get_device_name(0)  # GEAK-eval's constants do this before any import
    verdict = {"call": False, "exec": False, "reason": ""}
    try:
        gen = _import_result(gen_path)
        verdict["call"] = True
        ref = _import_result(ref_path)
        verdict["exec"], verdict["reason"] = exec_verdict(ref, gen, atol, rtol)
    except Exception as error:
        which = "reference" if verdict["call"] else "generated"
        verdict["exec"] = False
        verdict["reason"] = f"importing the {which} file raised {type(error).__name__}: {str(error)[:300]}"
        traceback.print_exc()
    pathlib.Path(result_path).write_text(json.dumps(verdict))
    return 0


def _call_step(gen_path: str) -> int:
    sys.argv = [gen_path]
    runpy.run_path(gen_path, run_name="__main__")
    return 0


def _child(step: str, args: tuple, workdir: str, path_zero: str) -> None:
    """Runs one step as `python3` would run its script: own session, output to files,
    sys.path of a fresh interpreter, exit status as the interpreter's."""
    os.setsid()
    try:
        for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
            os.dup2(os.open(os.path.join(workdir, f"{step}.{name}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    except OSError:  # the scratch folder is gone: the checker closed under us
        os._exit(1)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.chdir(workdir)
    sys.path[:] = [path_zero] + [entry for entry in sys.path if entry not in _OUR_PATHS]
    try:
        code = _call_step(*args) if step == "call" else _exec_step(*args)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, (int, type(None))):
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code & 0xFF)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """GEAK-eval's verdict on one reply: call_ok, exec_ok, why not (the last error line),
    and each step's wall seconds."""

    call_ok: bool
    exec_ok: bool
    reason: str = ""
    call_s: float = 0.0
    exec_s: float = 0.0


class Checker:
    """Runs GEAK-eval's check on replies, several at once from threads; every step ends
    within `timeout_s` plus a few seconds (its process group is killed)."""

    def __init__(self, timeout_s: float = STEP_TIMEOUT_S, scratch: str | None = None,
                 atol: float = ATOL, rtol: float = RTOL):
        self.timeout_s, self.atol, self.rtol = timeout_s, atol, rtol
        self._own_scratch = scratch is None
        self.scratch = scratch or tempfile.mkdtemp(prefix="geak-check-")
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(_PRELOAD)
        self._start_lock = threading.Lock()
        self._numbers = itertools.count()
        self._live: set[int] = set()

    def check(self, response: str | None, gold_path: str, code: str | None = None) -> Verdict:
        """Returns GEAK-eval's verdict on an LLM reply (or on `code` already extracted) for
        the task whose gold file is `gold_path`."""
        code = extract_code(response) if code is None else code
        if code is None:
            return Verdict(False, False, "Code is empty")
        gold = pathlib.Path(gold_path)
        folder = pathlib.Path(self.scratch) / f"{next(self._numbers):05d}-{gold.stem}"
        (folder / "gen").mkdir(parents=True)
        (folder / "exec").mkdir()
        gen_path = folder / "gen" / f"{gold.name}_gen_triton_code_{random.randint(999, 999999)}.py"
        gen_path.write_text(compose(code, gold.read_text()))
        try:
            return self._steps(folder, str(gen_path), str(gold.resolve()))
        finally:
            if self._own_scratch:
                shutil.rmtree(folder, ignore_errors=True)

    def _steps(self, folder: pathlib.Path, gen_path: str, ref_path: str) -> Verdict:
        status, call_s = self._run("call", (gen_path,), folder, str(pathlib.Path(gen_path).parent))
        if status != 0:
            reason = (f"timed out after {self.timeout_s:g} s" if status is None
                      else _last_error(folder / "call.stderr.txt"))
            return Verdict(False, False, f"call: {reason}", call_s)
        result_path = folder / "exec.json"
        status, exec_s = self._run("exec", (gen_path, ref_path, self.atol, self.rtol, str(result_path)),
                                   folder, str(folder / "exec"))
        if status is None:  # GEAK-eval's caught TimeoutExpired reports call False as well
            return Verdict(False, False, f"exec: timed out after {self.timeout_s:g} s", call_s, exec_s)
        if status != 0:  # GEAK-eval: the match step failed, the call stands
            return Verdict(True, False, f"exec crashed ({status}): "
                           f"{_last_error(folder / 'exec.stderr.txt')}", call_s, exec_s)
        if not result_path.exists():  # GEAK-eval: its verdict line is missing, caught as a failure
            return Verdict(False, False, "exec exited 0 before its verdict", call_s, exec_s)
        verdict = json.loads(result_path.read_text())
        # GEAK-eval's call verdict is the call step's; an import that fails here is exec False
        return Verdict(True, bool(verdict["exec"]), verdict["reason"], call_s, exec_s)

    def _run(self, step: str, args: tuple, folder: pathlib.Path, path_zero: str):
        """Returns (exit status, or None on a timeout; wall seconds) of one step."""
        process = self._context.Process(target=_child, args=(step, args, str(folder), path_zero))
        start = time.monotonic()
        with self._start_lock:
            process.start()
            self._live.add(process.pid)
        try:
            process.join(self.timeout_s)
            if process.exitcode is None:
                _kill_group(process.pid)
                process.join(10)
                return None, time.monotonic() - start
            return process.exitcode, time.monotonic() - start
        finally:
            self._live.discard(process.pid)

    def close(self) -> None:
        """Kills whatever step is still running and removes the scratch folder (if its own)."""
        for pid in list(self._live):
            _kill_group(pid)
        if self._own_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> "Checker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            continue


def _last_error(path: pathlib.Path) -> str:
    """Returns the last non-blank line of a step's stderr (the exception, as a rule)."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no output"
    return lines[-1].strip()[:300] if lines else "no error output"


def main() -> None:
    """`python geak_correctness.py GOLD.py REPLY_OR_CODE_FILE...`: prints each verdict."""
    if len(sys.argv) < 3:
        raise SystemExit(main.__doc__)
    with Checker() as checker:
        for path in sys.argv[2:]:
            print(path, checker.check(pathlib.Path(path).read_text(), sys.argv[1]))


if __name__ == "__main__":
    main()
