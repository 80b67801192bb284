"""What an external suite's harness hands back, and how it is judged on the trusted side.

A harness returns whatever its suite returns: dicts of tests or trials holding tensors,
NumPy arrays, tuples, numbers and strings. Inside the sandbox
(`fitness.sandbox.harness_run`) every tensor and number becomes a raw tensor file
(`fitness.processes.protocol`) and the containers a JSON structure naming them by index, so nothing
that crosses can run code here. `read` validates both; `compare` judges each top-level
entry (a test, a trial) as one case with `fitness.judge.checking`'s per-element rule, the
record kept as a built-in walk keeps it (`CaseErrors`).
"""

from __future__ import annotations

import dataclasses
import json
import torch

from fitness.processes import protocol
from fitness.judge import checking
from fitness.judge.case_errors import CaseErrors
from fitness.judge.walk import Failed


@dataclasses.dataclass(frozen=True)
class Outputs:
    """A harness's results as they crossed: {case: JSON structure} and the tensors it names."""

    structure: dict
    values: list


def _leaves(structure, count: int) -> list[int]:
    """Returns the value indices a structure names, in order; raises ProtocolError when it is
    malformed or names a value that did not cross."""
    if isinstance(structure, dict) and structure:
        tag = next(iter(structure))
        body = structure[tag]
        if (tag == "leaf" and set(structure) <= {"leaf", "dtype"} and type(body) is int
                and 0 <= body < count and isinstance(structure.get("dtype", ""), str)):
            return [body]
        if len(structure) == 1 and tag == "value" and (body is None or isinstance(body, (str, int, float))):
            return []
        if len(structure) == 1 and tag == "list" and isinstance(body, list):
            return [i for item in body for i in _leaves(item, count)]
        if len(structure) == 1 and tag == "dict" and isinstance(body, dict):
            return [i for item in body.values() for i in _leaves(item, count)]
    raise protocol.ProtocolError(f"malformed output structure {json.dumps(structure)[:200]}")


def read(directory: str, reply: dict) -> Outputs:
    """Returns the outputs a harness run wrote; raises ProtocolError on anything malformed."""
    values = protocol.read_values(directory, reply.get("outputs"), "cpu")
    if not all(isinstance(value, torch.Tensor) for value in values):
        raise protocol.ProtocolError("an output spec holds no tensor")
    structure = reply.get("structure")
    if not isinstance(structure, dict):
        raise protocol.ProtocolError(f"output structure is a {type(structure).__name__}, not an object")
    try:
        for case in structure.values():
            _leaves(case, len(values))
    except RecursionError:
        raise protocol.ProtocolError("output structure nests too deeply") from None
    return Outputs(structure, values)


def compare(expected: Outputs, actual: Outputs, tolerance) -> CaseErrors:
    """Returns each top-level entry (a test, a trial) judged as one case by
    `checking.compare_outputs`, every case judged and listed (errors NaN where a case's
    outputs do not compare); raises Failed when the entries themselves differ."""
    if not expected.structure:
        raise Failed("correct", "harness_error", "the reference produced no outputs")
    if set(actual.structure) != set(expected.structure):
        raise Failed("correct", "mismatch", f"outputs for {sorted(actual.structure)}, "
                     f"expected outputs for {sorted(expected.structure)}")
    errors = CaseErrors(list(expected.structure))
    for at, (name, shape) in enumerate(expected.structure.items()):
        verdict = _case_verdict(expected, actual, name, shape, tolerance)
        if verdict["kind"] is None:
            errors.note(at, verdict)
        else:
            errors.wrong_at(at, Failed("correct", verdict["kind"], f"{name}: {verdict['detail']}",
                                       verdict))
    return errors


def _case_verdict(expected: Outputs, actual: Outputs, name: str, shape, tolerance) -> dict:
    """Returns `checking.compare_outputs`'s verdict on one case's outputs."""
    if actual.structure[name] != shape:
        return {"kind": "mismatch", "detail": f"the outputs are laid out as "
                f"{json.dumps(actual.structure[name])[:300]}, expected {json.dumps(shape)[:300]}"}
    leaves = _leaves(shape, len(expected.values))
    return checking.compare_outputs([expected.values[i] for i in leaves],
                                    [actual.values[i] for i in leaves], tolerance)
