"""KernelBench's problems as judge-made inputs (docs/design.md, "External suites on the
judge's clock"): `get_inputs()` made anew from the judge's seed, `Model` as the reference, and
the candidate's `ModelNew` built in its worker the way KernelBench builds both.
"""

from __future__ import annotations

import dataclasses
import json
import types

from benchmarks.external.recorded import (LOADED, Positional, Unrecordable, crossing, import_source,
                                          outputs_of, salted_seeds, same_values)

MODEL_SEED = 42
"""KernelBench's seed before `get_init_inputs` and before building a model: `Model` and the
candidate's `ModelNew` draw the same weights when they draw them in the same order."""


@dataclasses.dataclass(frozen=True)
class ModelCalls(Positional):
    """A KernelBench problem's calls: `make_inputs` runs `get_inputs()` with the judge's seed
    on the device; the reference is `Model` built from `get_init_inputs()` after `MODEL_SEED`,
    called without autograd; the candidate's `ModelNew` is built the same way in its worker
    (`entry_call`, filled by `record` with the init inputs)."""

    task: str
    problem_source: str
    entry: str = "ModelNew"
    arity: int = 0
    inputs: int = 1
    written: tuple[int, ...] = ()
    entry_call: dict | None = None

    def _loaded(self, device: str) -> tuple[types.ModuleType, object, list]:
        """Returns (the problem module, its Model on `device`, the init inputs it was built
        from), made once in this process."""
        import torch

        key = (self.task, hash(self.problem_source), torch.device(device).type)
        if key not in LOADED:
            problem = LOADED.get((self.task, hash(self.problem_source)))
            if problem is None:
                problem = LOADED[(self.task, hash(self.problem_source))] = import_source(
                    self.problem_source, f"kernelevo_problem_{abs(hash(self.task))}")
            torch.manual_seed(MODEL_SEED)
            init = problem.get_init_inputs()
            torch.manual_seed(MODEL_SEED)
            LOADED[key] = problem, problem.Model(*init).to(device), init
        return LOADED[key]

    def make_inputs(self, params, seed: int, device) -> list:
        """Returns `get_inputs()` made anew from `seed`, on `device`."""
        import torch

        problem, _, _ = self._loaded(str(device))
        with salted_seeds(seed, str(device)):
            values = problem.get_inputs()
        return [value.to(device) if isinstance(value, torch.Tensor) else value for value in values]

    def __call__(self, *inputs) -> list:
        """The reference: `Model` on `inputs`, on their device, without autograd."""
        import torch

        device = next((str(value.device) for value in inputs if isinstance(value, torch.Tensor)), "cpu")
        with torch.no_grad():
            _, model, _ = self._loaded(device)
            return outputs_of(model(*inputs), inputs, ())

    def record(self, device, count: int | None) -> dict:
        """Returns {"calls": the fields `entry_call` and `arity`} once the problem's inputs
        are checked to cross to the worker and to change with the seed, or {"unrecordable": why}."""
        import torch

        device = str(device)
        _, _, init = self._loaded(device)
        try:
            init = json.loads(json.dumps(list(init)))
        except TypeError as error:
            return {"unrecordable": f"get_init_inputs returns what does not cross to the worker: {error}"}
        first, again = (self.make_inputs({}, salt, device) for salt in (1, 2))
        try:
            if not any(isinstance(value, torch.Tensor) for value in crossing(first, "get_inputs returns")):
                raise Unrecordable("get_inputs returns no tensor")
            if same_values(first, again):
                raise Unrecordable("get_inputs does not change with the seed")
            self(*first)
        except Unrecordable as error:
            return {"unrecordable": str(error)}
        return {"calls": {"arity": len(first), "entry_call": {"kind": "model", "init": init, "seed": MODEL_SEED}}}
