"""ROCm's `test_performance` launches as judge-made inputs (docs/design.md, "External suites
on the judge's clock").

A ROCm benchmark file times its kernel in `test_performance`, parametrized by pytest: the
body makes inputs and hands GEAK-eval's benchmarker a lambda that launches the kernel
(`kernel[grid](...)`) or calls a wrapper of the kernel part. In a checker, `LaunchCalls`
runs that body per parametrization with the kernel part's names replaced by recorders, so
the launch is caught with its grid, arguments and meta-parameters. A case's inputs are the
body run again under the judge's salted seeds; the worker launches the candidate's kernel
of that name on them (`Task.entry_call`); the outputs are the arguments the reference writes.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import types

from benchmarks.external.recorded import (LOADED, Positional, Recorded, Unrecordable, crossing, import_source,
                                          outputs_of, salted_seeds, stand_in_geak_package, written_by)

MAX_CASES = 8
"""Parametrizations timed per task, spread evenly over the file's (a median of 24, up to 1,300)."""


def parametrizations(test) -> list[dict]:
    """Returns the keyword sets pytest would call `test` with, from its parametrize marks
    (stacked marks multiply; a `pytest.param` marked skip or xfail is left out)."""
    sets = [{}]
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, values = (list(mark.args) + [mark.kwargs.get("argnames"), mark.kwargs.get("argvalues")])[:2]
        names = [name.strip() for name in names.split(",")] if isinstance(names, str) else list(names)
        rows = []
        for value in values:
            if hasattr(value, "values") and hasattr(value, "marks"):  # pytest.param(...)
                if any(mark.name in ("skip", "skipif", "xfail") for mark in value.marks):
                    continue
                value = value.values
            elif len(names) == 1:
                value = (value,)
            rows.append(dict(zip(names, value)))
        sets = [{**left, **right} for left, right in itertools.product(sets, rows)]
    return sets


def _spread(count: int, most: int) -> list[int]:
    """Returns at most `most` indices of `count`, evenly spread, first and last included."""
    if count <= most:
        return list(range(count))
    if most == 1:
        return [0]
    return sorted({round(at * (count - 1) / (most - 1)) for at in range(most)})


class _Launcher:
    """Stands in for a kernel of the kernel part: `kernel[grid](...)` raises `Recorded`
    with (grid, args) and the keyword arguments."""

    def __init__(self, name: str):
        self.name = name

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            raise Recorded(self.name, (grid, args), kwargs)
        return launch


def _function_recorder(name: str):
    def record(*args, **kwargs):
        raise Recorded(name, (None, args), kwargs)
    return record


@dataclasses.dataclass(frozen=True)
class LaunchCalls(Positional):
    """A ROCm file's `test_performance` launches; the task's reference (call it on a case's
    inputs) and input maker. `kernel_names`: the kernel part's names that launch a kernel
    (`common.launching_definitions`: a helper that launches nothing runs as it is). `record`
    (in a checker) fills `entry` (the kernel or wrapper launched first), `arity`, `written`,
    `inputs` (cases), `picked` (their parametrizations) and `entry_call` (a launch: arguments,
    grid and meta-parameter names; None for a wrapper)."""

    task: str
    module_source: str
    kernel_names: tuple[str, ...]
    entry: str = ""
    arity: int = 0
    written: tuple[int, ...] = ()
    inputs: int = 0
    picked: tuple[int, ...] = ()
    entry_call: dict | None = None

    def _module(self) -> types.ModuleType:
        """Returns the reference file (kernel and tests) imported once in this process."""
        key = (self.task, hash(self.module_source))
        if key not in LOADED:
            stand_in_geak_package()
            LOADED[key] = import_source(self.module_source, f"kernelevo_rocm_{abs(hash(self.task))}")
        return LOADED[key]

    def _seen(self, module, params: dict, salt: int, device: str) -> tuple[str, object, list, dict]:
        """Runs `test_performance` on `params` with the kernel part's names recording;
        returns (name, grid or None, args, kwargs) of the first launch or call it makes."""
        test = module.test_performance
        # pytest leaves an argument with a default alone (`device='cuda'`): not a fixture
        extra = [name for name, parameter in inspect.signature(test).parameters.items()
                 if name not in params and parameter.default is inspect.Parameter.empty]
        if set(extra) - {"request"}:
            raise Unrecordable(f"test_performance takes fixture(s) {sorted(set(extra) - {'request'})}")
        if "request" in extra:
            params = {**params, "request": types.SimpleNamespace(node=types.SimpleNamespace(
                name=f"test_performance[{'-'.join(map(str, params.values()))}]"))}
        saved = {name: getattr(module, name) for name in self.kernel_names if hasattr(module, name)}
        try:
            for name, value in saved.items():
                if inspect.isfunction(value):
                    setattr(module, name, _function_recorder(name))
                elif hasattr(value, "arg_names"):  # a @triton.jit kernel, autotuned or not
                    setattr(module, name, _Launcher(name))
            with salted_seeds(salt, device):
                test(**params)
        except Recorded as seen:
            (grid, args), kwargs = seen.args_seen, seen.kwargs
            return seen.name, grid, list(args), kwargs
        finally:
            for name, value in saved.items():
                setattr(module, name, value)
        raise Unrecordable("test_performance launched nothing of the kernel part")

    def _values(self, module, name: str, grid, args: list, kwargs: dict) -> tuple[list, dict | None]:
        """Returns (the inputs of one launch or call, its entry_call) in positional form."""
        target = getattr(module, name)
        if grid is None:  # a wrapper function of the kernel part
            try:
                bound = inspect.signature(target).bind(*args, **kwargs)
            except TypeError as error:
                raise Unrecordable(f"the call of {name} does not bind: {error}") from None
            if bound.kwargs:
                raise Unrecordable(f"the call of {name} passes keyword-only argument(s)")
            return list(bound.args), None
        if callable(grid):
            meta = {**dict(zip(target.arg_names, args)), **kwargs}
            try:
                grid = grid(meta)
            except Exception as error:  # a grid of meta-parameters an autotuner picks
                raise Unrecordable(f"the grid of {name} needs what the launch does not pass: {error!r}") from None
        grid = list(grid) if isinstance(grid, (tuple, list)) else [grid]
        if not all(isinstance(size, int) for size in grid) or not 1 <= len(grid) <= 3:
            raise Unrecordable(f"the grid of {name} is not 1-3 integers: {grid!r:.80}")
        meta = sorted(kwargs)
        values = list(args) + grid + [1] * (3 - len(grid)) + [kwargs[key] for key in meta]
        return values, {"kind": "launch", "args": len(args), "meta": meta}

    def _case(self, module, index: int, salt: int, device: str) -> tuple[str, list, dict | None]:
        params = parametrizations(module.test_performance)[index]
        name, grid, args, kwargs = self._seen(module, params, salt, device)
        values, call = self._values(module, name, grid, args, kwargs)
        return name, crossing(values, f"the launch of {name} passes"), call

    def make_inputs(self, params, seed: int, device) -> list:
        """Returns case `params["input"]`'s inputs, made anew from `seed`."""
        name, values, _ = self._case(self._module(), self.picked[int(params["input"])], seed, str(device))
        if name != self.entry:
            raise RuntimeError(f"test_performance launched {name}, not {self.entry}")
        return values

    def _run(self, inputs: list):
        """Runs the recorded launch (or call) of the reference's kernel part on `inputs`, in
        place; returns what a call returns (a launch: nothing)."""
        target = getattr(self._module(), self.entry)
        if self.entry_call is None:
            return target(*inputs)
        count, meta = self.entry_call["args"], self.entry_call["meta"]
        target[tuple(inputs[count:count + 3])](*inputs[:count], **dict(zip(meta, inputs[count + 3:])))
        return None

    def __call__(self, *inputs) -> list:
        """The reference: `_run` on `inputs`, the arguments it writes cloned first; returns
        what it returns, then those arguments."""
        inputs = [value.clone() if at in self.written else value for at, value in enumerate(inputs)]
        return outputs_of(self._run(inputs), inputs, self.written)

    def record(self, device, count: int | None) -> dict:
        """Returns {"calls": the fields `record` fills} or {"unrecordable": why}."""
        device = str(device)
        try:
            module = self._module()
            if not hasattr(module, "test_performance"):
                raise Unrecordable("the file has no test_performance")
            picked = _spread(len(parametrizations(module.test_performance)), count or MAX_CASES)
            if not picked:
                raise Unrecordable("test_performance has no parametrization left to run")
            cases = [self._case(module, index, 1, device) for index in picked]
            names = sorted({name for name, _, _ in cases})
            if len(names) > 1 or len({str(call) for _, _, call in cases}) > 1:
                raise Unrecordable(f"test_performance launches differently across parametrizations: {names}")
            name, first, call = cases[0]
            again = self._case(module, picked[0], 2, device)[1]
            written = written_by(dataclasses.replace(self, entry=name, entry_call=call)._run, first, again)
        except Unrecordable as error:
            return {"unrecordable": str(error)}
        return {"calls": {"entry": name, "arity": len(first), "written": list(written),
                          "inputs": len(picked), "picked": picked, "entry_call": call}}
