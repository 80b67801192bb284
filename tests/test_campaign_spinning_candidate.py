"""A campaign whose recorded generation is a kernel that never ends finishes its budget
(issue 49): the spinning candidate is a timeout row within its harness run's limit plus the
watchdog's grace, and the offline operators go on from the baseline (real Ray, real sandboxed
workers, the TritonBench-revised fixture suite on the interpreter)."""

import json
import pathlib
import time

import pandas as pd
import pytest

from evo import campaign, config as config_lib
from fitness import Limits
from fitness.processes import watchdog

pytestmark = pytest.mark.slow  # campaign-level: `make test-fast` leaves it out

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
GOLD_ROW = json.loads((FIXTURES / "recorded_generations" / "tritonbench_g.jsonl")
                      .read_text().splitlines()[0])
"""The recorded row of scale_shift: its label is the gold code the campaign matches it by."""
LIMIT_S = 3.0

SPINNING_REPLY = '''The kernel waits for its flag, then scales and shifts.

```python
import torch
import triton
import triton.language as tl


@triton.jit
def scale_shift_kernel(x_ptr, out_ptr, flag_ptr, n_elements, scale, shift, BLOCK_SIZE: tl.constexpr):
    ready = tl.load(flag_ptr, volatile=True)
    while ready == 0:
        ready = tl.load(flag_ptr, volatile=True)
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x * scale + shift).to(out_ptr.dtype.element_ty), mask=mask)


def scale_shift(x, scale, shift):
    out = torch.empty_like(x)
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    n_elements = out.numel()
    scale_shift_kernel[(triton.cdiv(n_elements, 256),)](x, out, flag, n_elements, scale, shift,
                                                        BLOCK_SIZE=256)
    return out
```
'''


def test_a_campaign_holding_a_kernel_that_never_ends_finishes_its_budget(shared_ray, tmp_path):
    generations = tmp_path / "spinning.jsonl"
    generations.write_text(json.dumps({**GOLD_ROW, "predict": SPINNING_REPLY}) + "\n")
    config = config_lib.from_dict({
        "campaign": {"name": "spinning", "tasks": ["scale_shift"], "suite": "tritonbench-revised",
                     "path": str(FIXTURES / "external" / "tritonbench"), "seed_with_baseline": True},
        "search": {"generations": 2, "islands": 1, "population": 2, "offspring": 1},
        "operators": {"mode": "offline", "generations_from": str(generations)},
        "fitness": {"device": "interpreter", "workers": 2, "timeouts": {
            "import": LIMIT_S, "compile": LIMIT_S, "check": LIMIT_S, "bench": 10.0}}})
    start = time.monotonic()
    campaign.run_campaign(config, tmp_path / "run")
    took_s = time.monotonic() - start

    rows = pd.read_parquet(tmp_path / "run" / "evaluations").sort_values(["generation", "operator"])
    assert sorted(rows.generation.unique()) == [0, 1, 2]  # every generation of the budget
    (spinning,) = rows[rows.operator == "generator"].itertuples()
    assert (spinning.failure_kind, spinning.generation) == ("timeout", 0), spinning.error_trace
    harness_run_s = Limits.uniform(LIMIT_S).harness_run_s
    assert harness_run_s <= spinning.check_s <= harness_run_s + watchdog.GRACE_S + 3.0
    assert rows[rows.generation > 0].correct.any()  # the search went on from the baseline
    assert took_s < 240
