"""The device probe: a trusted tiny Triton kernel every worker runs at start-up.

Running it proves the device answers (a worker that cannot probe is a device problem, not a
candidate's) and pays Triton's one-time set-up (slowest on the interpreter's first launch)
before any candidate is on the clock.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _fill_kernel(out_ptr, value, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, value, mask=offsets < n_elements)


def run(device: str) -> None:
    """Fills a small tensor on `device` with a kernel and checks it; raises if the device is wrong."""
    out = torch.zeros(100, device=device)
    _fill_kernel[(triton.cdiv(100, 64),)](out, 2.0, 100, BLOCK_SIZE=64)
    total = float(out.sum().item())
    if total != 200.0:
        raise RuntimeError(f"device probe on {device} returned {total}, expected 200.0")
